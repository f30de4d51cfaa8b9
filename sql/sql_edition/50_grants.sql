-- Grants, renewals and the changes of holder, as extension/lease_acquire.c and
-- extension/lease_change.c make them: a refusal that needs no lock is decided
-- on the unlocked row; anything else on the row locked FOR NO KEY UPDATE (to
-- extend) or FOR UPDATE (a change of holder, which first takes the ending
-- grant's fence lock: lease_sql_lock_for_change), with the clock read
-- after the lock is granted. Each runs as the owner (SECURITY DEFINER).
--
-- Twins (the same rules, kept equal by tests/contract/cases.json):
-- extension/lease_acquire.c and extension/lease_change.c; the test double's
-- lease_store (client/src/testing/lease_store.cpp).

-- Renew, release and handover belong to the role that was granted the lease.
CREATE FUNCTION @extschema@.lease_sql_check_role(name text, owner_role name)
	RETURNS void
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $check_role$
BEGIN
	IF owner_role <> @extschema@.lease_sql_caller() AND NOT @extschema@.lease_sql_caller_is_superuser() THEN
		RAISE EXCEPTION 'lease "%" was granted to role "%"', name, owner_role
			USING ERRCODE = '42501',
				  DETAIL = 'Only the role that acquired a lease, or a superuser, may renew, release or hand it over.';
	END IF;
END
$check_role$;

-- Whether holder is kept out of lease l, which it does not validly hold:
-- someone else holds it, or a lost grant's lock delay runs (a release set
-- it to 0; its own holder is never kept out). The refusal, or null.
CREATE FUNCTION @extschema@.lease_sql_refusal(l @extschema@.leases, holder text, now timestamptz)
	RETURNS @extschema@.lease_grant
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $refusal$
DECLARE
	available timestamptz;
BEGIN
	IF l.holder IS NOT NULL AND now < l.expires_at THEN
		RETURN (false, l.epoch, l.holder, l.expires_at);
	END IF;
	available := l.expires_at + CASE WHEN l.holder IS NOT DISTINCT FROM holder
									 THEN interval '0' ELSE l.lock_delay END;
	IF now < available THEN
		RETURN (false, l.epoch, l.holder, available);
	END IF;
	RETURN NULL;
END
$refusal$;

-- The row of lease name locked (FOR UPDATE when change, else FOR NO KEY
-- UPDATE) if (holder, epoch) is its grant of record, expired or not; else
-- null. A caller with another grant's epoch locks nothing (but in a race
-- with the change that ended its grant), so it cannot stall the holder's
-- renewals by keeping its transaction open. Another role's grant of
-- record raises 42501, whose rollback drops the lock.
CREATE FUNCTION @extschema@.lease_sql_grant_of_record(name text, holder text, epoch bigint,
													  change boolean)
	RETURNS @extschema@.leases
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $grant_of_record$
DECLARE
	l @extschema@.leases;
BEGIN
	IF change THEN
		SELECT * INTO l FROM @extschema@.leases r
		 WHERE r.name = lease_sql_grant_of_record.name AND r.holder = lease_sql_grant_of_record.holder
		   AND r.epoch = lease_sql_grant_of_record.epoch
		   FOR UPDATE;
	ELSE
		SELECT * INTO l FROM @extschema@.leases r
		 WHERE r.name = lease_sql_grant_of_record.name AND r.holder = lease_sql_grant_of_record.holder
		   AND r.epoch = lease_sql_grant_of_record.epoch
		   FOR NO KEY UPDATE;
	END IF;
	IF NOT FOUND THEN
		RETURN NULL;
	END IF;
	PERFORM @extschema@.lease_sql_check_role(name, l.owner_role);
	RETURN l;
END
$grant_of_record$;

-- Grant the lease, whose row is locked FOR UPDATE and whose ending grant's
-- fence lock is held, to holder with a new epoch; record event.
CREATE FUNCTION @extschema@.lease_sql_grant_new_epoch(name text, old_holder text, holder text,
													  ttl_us bigint, lock_delay_us bigint, event text,
													  OUT epoch bigint, OUT expires_at timestamptz)
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $grant_new_epoch$
DECLARE
	now timestamptz;
BEGIN
	epoch := @extschema@.lease_sql_next_epoch();
	now := clock_timestamp();
	expires_at := now + ttl_us * interval '1 microsecond';
	UPDATE @extschema@.leases l
	   SET holder = lease_sql_grant_new_epoch.holder, epoch = lease_sql_grant_new_epoch.epoch,
		   acquired_at = now, renewed_at = now, expires_at = lease_sql_grant_new_epoch.expires_at,
		   ttl = ttl_us * interval '1 microsecond', owner_role = @extschema@.lease_sql_caller(),
		   lock_delay = lock_delay_us * interval '1 microsecond',
		   transitions = l.transitions + CASE WHEN old_holder IS NOT DISTINCT FROM lease_sql_grant_new_epoch.holder
											   THEN 0 ELSE 1 END
	 WHERE l.name = lease_sql_grant_new_epoch.name;
	PERFORM @extschema@.lease_sql_record_event(event, name, holder, epoch, expires_at);
END
$grant_new_epoch$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_grant_new_epoch(text, text, text, bigint, bigint, text) FROM PUBLIC;

-- Free a held lease whose row is locked FOR UPDATE; a release skips the
-- lock delay, a revoke keeps it.
CREATE FUNCTION @extschema@.lease_sql_free(l @extschema@.leases, event text)
	RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $free$
DECLARE
	now timestamptz := clock_timestamp();
BEGIN
	PERFORM @extschema@.lease_sql_lock_for_change(l.name, l.holder, l.epoch, l.expires_at);
	now := clock_timestamp();
	UPDATE @extschema@.leases r
	   SET holder = NULL, expires_at = least(r.expires_at, now),
		   lock_delay = CASE WHEN event = 'released' THEN interval '0' ELSE r.lock_delay END
	 WHERE r.name = l.name;
	PERFORM @extschema@.lease_sql_record_event(event, l.name, l.holder, l.epoch, least(now, l.expires_at));
END
$free$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_free(@extschema@.leases, text) FROM PUBLIC;

CREATE FUNCTION @extschema@.lease_sql_acquire(name text, holder text, ttl interval, lock_delay interval)
	RETURNS @extschema@.lease_grant
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $acquire$
DECLARE
	ttl_us bigint;
	delay_us bigint;
	l @extschema@.leases;
	now timestamptz;
	refused @extschema@.lease_grant;
	mine boolean;
	granted record;
	quota bigint := @extschema@.lease_sql_setting_ms('pg_lease.max_leases_per_role', 10000);
	owned bigint;
BEGIN
	name := @extschema@.lease_sql_label(name, 'lease name');
	holder := @extschema@.lease_sql_label(holder, 'holder');
	ttl_us := @extschema@.lease_sql_interval_us(ttl, 'ttl', false);
	delay_us := @extschema@.lease_sql_interval_us(lock_delay, 'lock_delay', true);
	PERFORM @extschema@.lease_sql_durable();
	FOR attempt IN 1..5 LOOP
		SELECT * INTO l FROM @extschema@.leases r WHERE r.name = lease_sql_acquire.name;
		IF FOUND THEN
			-- Someone else validly holds it, or its lock delay runs: refused
			-- from the unlocked row (no lock on a lease of no claim).
			now := clock_timestamp();
			mine := l.holder IS NOT NULL AND now < l.expires_at AND l.holder = holder;
			IF NOT mine THEN
				refused := @extschema@.lease_sql_refusal(l, holder, now);
				IF refused.acquired IS NOT NULL THEN  -- (a row with a null holder is not "IS NOT NULL")
					RETURN refused;
				END IF;
				SELECT * INTO l FROM @extschema@.leases r WHERE r.name = lease_sql_acquire.name FOR UPDATE;
			ELSE
				PERFORM @extschema@.lease_sql_check_role(name, l.owner_role);
				SELECT * INTO l FROM @extschema@.leases r WHERE r.name = lease_sql_acquire.name
				   FOR NO KEY UPDATE;
			END IF;
			CONTINUE WHEN NOT FOUND;	-- deleted meanwhile: look again
			now := clock_timestamp();
			-- 1. The caller holds it already: extend, same epoch.
			IF l.holder IS NOT NULL AND now < l.expires_at AND l.holder = holder THEN
				PERFORM @extschema@.lease_sql_check_role(name, l.owner_role);
				UPDATE @extschema@.leases r
				   SET renewed_at = now, expires_at = now + ttl_us * interval '1 microsecond',
					   ttl = ttl_us * interval '1 microsecond'
				 WHERE r.name = lease_sql_acquire.name;
				RETURN (true, l.epoch, holder, now + ttl_us * interval '1 microsecond');
			END IF;
			-- 2. Someone else holds it, or its lock delay runs: no change.
			refused := @extschema@.lease_sql_refusal(l, holder, now);
			IF refused.acquired IS NOT NULL THEN  -- (a row with a null holder is not "IS NOT NULL")
				RETURN refused;
			END IF;
			-- 3. Free or expired: the old grant's writers end first, then a
			--    new grant with a new epoch (the row lock is still needed
			--    FOR UPDATE: the extend path above took a weaker one).
			IF mine THEN
				SELECT * INTO l FROM @extschema@.leases r WHERE r.name = lease_sql_acquire.name FOR UPDATE;
			END IF;
			PERFORM @extschema@.lease_sql_lock_for_change(name, l.holder, l.epoch, l.expires_at);
			granted := @extschema@.lease_sql_grant_new_epoch(name, l.holder, holder, ttl_us, delay_us,
				CASE WHEN l.holder IS NOT NULL THEN 'takeover' ELSE 'acquired' END);
			RETURN (true, granted.epoch, holder, granted.expires_at);
		END IF;

		-- 4. No row: the first grant of this name.
		IF quota > 0 AND NOT @extschema@.lease_sql_caller_is_superuser() THEN
			SELECT count(*) INTO owned FROM @extschema@.leases r
			 WHERE r.owner_role = @extschema@.lease_sql_caller();
			IF owned >= quota THEN
				RAISE EXCEPTION 'role "%" may not create more than % leases', @extschema@.lease_sql_caller(), quota
					USING ERRCODE = '54000',
						  DETAIL = format('The latest grant of %s leases was made by this role.', owned),
						  HINT = 'Reuse lease names, ask an administrator to run lease_prune(), or raise pg_lease.max_leases_per_role.';
			END IF;
		END IF;
		now := clock_timestamp();
		INSERT INTO @extschema@.leases AS r (name, holder, epoch, acquired_at, renewed_at, expires_at,
											  ttl, transitions, owner_role, lock_delay)
		VALUES (name, holder, @extschema@.lease_sql_next_epoch(), now, now,
				now + ttl_us * interval '1 microsecond', ttl_us * interval '1 microsecond', 0,
				@extschema@.lease_sql_caller(), delay_us * interval '1 microsecond')
		ON CONFLICT ON CONSTRAINT leases_pkey DO NOTHING
		RETURNING * INTO l;
		CONTINUE WHEN NOT FOUND;	-- a concurrent caller created it first
		PERFORM @extschema@.lease_sql_record_event('acquired', name, holder, l.epoch, l.expires_at);
		RETURN (true, l.epoch, holder, l.expires_at);
	END LOOP;
	RAISE EXCEPTION 'could not acquire lease "%" because of concurrent changes', name
		USING ERRCODE = '40001', HINT = 'Try again.';
END
$acquire$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_acquire(text, text, interval, interval) FROM PUBLIC;

CREATE FUNCTION @extschema@.lease_acquire(name text, holder text, ttl interval)
	LANGUAGE sql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $acquire3$
	SELECT * FROM @extschema@.lease_sql_acquire(name, holder, ttl, interval '0')
$acquire3$;

CREATE FUNCTION @extschema@.lease_acquire(name text, holder text, ttl interval, lock_delay interval)
	LANGUAGE sql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $acquire4$
	SELECT * FROM @extschema@.lease_sql_acquire(name, holder, ttl, lock_delay)
$acquire4$;

-- Renew is the call a holder makes every few seconds, so its usual case
-- is written out here rather than through the helpers (each a call with a
-- SET clause, set up again in every transaction): the argument checks run
-- only when an argument is bad, the role check only when the grant is
-- another role's. Same checks, same order, same errors.
CREATE FUNCTION @extschema@.lease_renew(name text, holder text, epoch bigint, ttl interval DEFAULT NULL)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $renew$
DECLARE
	ttl_us bigint;
	l @extschema@.leases;
	now timestamptz;
BEGIN
	IF name IS NULL OR holder IS NULL OR epoch IS NULL
	   OR octet_length(name) NOT BETWEEN 1 AND 255 OR octet_length(holder) NOT BETWEEN 1 AND 255 THEN
		name := @extschema@.lease_sql_label(name, 'lease name');
		holder := @extschema@.lease_sql_label(holder, 'holder');
		epoch := @extschema@.lease_sql_epoch_arg(epoch);
	END IF;
	IF ttl IS NOT NULL THEN
		ttl_us := @extschema@.lease_sql_interval_us(ttl, 'ttl', false);
	END IF;
	IF current_setting('synchronous_commit') IN ('off', 'local') THEN
		PERFORM @extschema@.lease_sql_durable();
	END IF;
	-- expiry as of now, with the row locked: never revive a lease
	SELECT * INTO l FROM @extschema@.leases r
	 WHERE r.name = lease_renew.name AND r.holder = lease_renew.holder AND r.epoch = lease_renew.epoch
	   FOR NO KEY UPDATE;
	IF NOT FOUND THEN
		RETURN NULL;
	ELSIF l.owner_role <> @extschema@.lease_sql_caller() THEN
		PERFORM @extschema@.lease_sql_check_role(name, l.owner_role);
	END IF;
	now := clock_timestamp();
	IF now >= l.expires_at THEN
		RETURN NULL;
	ELSIF ttl_us IS NULL THEN
		-- the grant's own ttl: always microseconds alone (every grant writes
		-- it so), so adding it is the exact sum C makes
		UPDATE @extschema@.leases r SET renewed_at = now, expires_at = now + l.ttl
		 WHERE r.name = lease_renew.name;
		RETURN now + l.ttl;
	END IF;
	UPDATE @extschema@.leases r
	   SET renewed_at = now, expires_at = now + ttl_us * interval '1 microsecond',
		   ttl = ttl_us * interval '1 microsecond'
	 WHERE r.name = lease_renew.name;
	RETURN now + ttl_us * interval '1 microsecond';
END
$renew$;

CREATE FUNCTION @extschema@.lease_release(name text, holder text, epoch bigint)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $release$
DECLARE
	l @extschema@.leases;
BEGIN
	name := @extschema@.lease_sql_label(name, 'lease name');
	holder := @extschema@.lease_sql_label(holder, 'holder');
	epoch := @extschema@.lease_sql_epoch_arg(epoch);
	-- as durable as the caller's synchronous_commit (as in the C edition):
	-- a lost release only keeps the lease until its ttl, and the next
	-- grant, a durable commit, makes it durable first (WAL order)
	l := @extschema@.lease_sql_grant_of_record(name, holder, epoch, true);
	IF l.name IS NULL THEN
		RETURN false;
	END IF;
	PERFORM @extschema@.lease_sql_free(l, 'released');
	RETURN true;
END
$release$;

CREATE FUNCTION @extschema@.lease_handover(name text, holder text, epoch bigint, successor text)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $handover$
DECLARE
	l @extschema@.leases;
	granted record;
BEGIN
	name := @extschema@.lease_sql_label(name, 'lease name');
	holder := @extschema@.lease_sql_label(holder, 'holder');
	epoch := @extschema@.lease_sql_epoch_arg(epoch);
	successor := @extschema@.lease_sql_label(successor, 'successor');
	PERFORM @extschema@.lease_sql_durable();
	l := @extschema@.lease_sql_grant_of_record(name, holder, epoch, true);
	IF l.name IS NULL OR clock_timestamp() >= l.expires_at THEN
		RETURN NULL;
	END IF;
	PERFORM @extschema@.lease_sql_lock_for_change(name, l.holder, l.epoch, l.expires_at);
	granted := @extschema@.lease_sql_grant_new_epoch(name, l.holder, successor,
		(extract(epoch FROM l.ttl) * 1000000)::bigint,
		(extract(epoch FROM l.lock_delay) * 1000000)::bigint, 'handover');
	RETURN granted.epoch;
END
$handover$;

CREATE FUNCTION @extschema@.lease_revoke(name text)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $revoke$
DECLARE
	l @extschema@.leases;
BEGIN
	name := @extschema@.lease_sql_label(name, 'lease name');
	PERFORM @extschema@.lease_sql_durable();
	SELECT * INTO l FROM @extschema@.leases r WHERE r.name = lease_revoke.name;
	IF NOT FOUND OR l.holder IS NULL THEN
		RETURN false;
	END IF;
	SELECT * INTO l FROM @extschema@.leases r WHERE r.name = lease_revoke.name FOR UPDATE;
	IF NOT FOUND OR l.holder IS NULL THEN
		RETURN false;
	END IF;
	PERFORM @extschema@.lease_sql_free(l, 'revoked');
	RETURN true;
END
$revoke$;

CREATE FUNCTION @extschema@.lease_end_grant_writers(name text, holder text, epoch bigint, expires_at timestamptz)
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $end_grant_writers$
BEGIN
	name := @extschema@.lease_sql_label(name, 'lease name');
	epoch := @extschema@.lease_sql_epoch_arg(epoch);
	IF expires_at IS NULL THEN
		RAISE EXCEPTION 'expires_at must not be null' USING ERRCODE = '22004';
	END IF;
	PERFORM @extschema@.lease_sql_lock_for_change(name, holder, epoch, expires_at);
END
$end_grant_writers$;
