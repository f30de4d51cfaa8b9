-- Before a change of holder (a grant of a free or expired lease, release,
-- revoke, handover, prune): the ending grant's fence lock, exclusively,
-- before the change commits. It waits for that grant's fenced
-- transactions (each holds the lock shared) at most
-- pg_lease.takeover_timeout (0: as long as they take), then ends them as
-- extension/lease_evict.c does (waiting on its client, idle in
-- transaction or not: terminated; running: cancelled, terminated 250 ms
-- later or as soon as it waits on its client; another role's, whose state
-- only pg_read_all_stats shows: terminated), each recorded once as an evict
-- event; 5 s after that the change fails with 55P03. Ending another role's
-- backends needs pg_signal_backend (a superuser's, superuser): without it
-- the change waits out that bound and fails, and the stalled writer keeps
-- the lease's next holder out until its transaction ends; but a writer
-- idle in its transaction ends itself first (lease_sql_bound_idle below).
--
-- The same wait ends the writers of a downstream floor (class 19526) for
-- lease_raise, those of the old floor and those of a lower raise still
-- open (70_floors.sql): lease_sql_lock_exclusive takes the lock of (class,
-- key) and names (name, holder, epoch, expires_at) in its evict events.
CREATE FUNCTION @extschema@.lease_sql_lock_exclusive(class integer, key integer, name text,
													 holder text, epoch bigint, expires_at timestamptz)
	RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $lock_exclusive$
DECLARE
	timeout_ms bigint := @extschema@.lease_sql_setting_ms('pg_lease.takeover_timeout', 1000);
	started timestamptz := clock_timestamp();
	waited_ms double precision;
	slice_ms bigint;
	saved_lock_timeout text := current_setting('lock_timeout');
	cancelled integer[] := '{}';
	cancelled_at timestamptz[] := '{}';
	ended integer[] := '{}';
	writer record;
	i integer;
	refused boolean;
BEGIN
	IF timeout_ms = 0 THEN
		PERFORM pg_advisory_xact_lock(class, key);
		RETURN;
	END IF;
	LOOP
		EXIT WHEN pg_try_advisory_xact_lock(class, key);
		waited_ms := extract(epoch FROM clock_timestamp() - started) * 1000;
		IF waited_ms >= timeout_ms THEN
			-- each look sees the backends as they are now (a transaction
			-- reads pg_stat_activity once and keeps what it read)
			PERFORM pg_stat_clear_snapshot();
			FOR writer IN
				SELECT l.pid, a.state, a.wait_event
				  FROM pg_locks l
				  LEFT JOIN pg_stat_activity a ON a.pid = l.pid
				 WHERE l.locktype = 'advisory' AND l.classid = class::oid AND l.objsubid = 2
				   AND l.objid = (key::bigint & 4294967295)::oid AND l.mode = 'ShareLock'
				   AND l.granted AND l.pid IS NOT NULL AND l.pid <> pg_backend_pid()
				   AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
			LOOP
				CONTINUE WHEN writer.pid = ANY (ended);
				i := array_position(cancelled, writer.pid);
				refused := false;
				BEGIN
					-- Waiting on its client (idle in transaction, or mid-statement
					-- as a client stopped in pipeline mode leaves it): terminated,
					-- as a cancel that reaches a backend reading a command is
					-- dropped (lease_evict.c: WAIT_EVENT_CLIENT_READ). A backend
					-- whose state the owner may not see (another role's, without
					-- pg_read_all_stats: state null) may be waiting so: terminated.
					IF writer.state IS NULL OR writer.state LIKE 'idle in transaction%'
					   OR writer.wait_event = 'ClientRead'
					   OR (i IS NOT NULL AND clock_timestamp() - cancelled_at[i] >= interval '250 ms') THEN
						PERFORM pg_terminate_backend(writer.pid);
						ended := ended || writer.pid;
					ELSIF i IS NULL THEN
						PERFORM pg_cancel_backend(writer.pid);
						cancelled := cancelled || writer.pid;
						cancelled_at := cancelled_at || clock_timestamp();
					END IF;
				EXCEPTION WHEN insufficient_privilege THEN
					refused := true;
					ended := ended || writer.pid;	-- asked once; it now waits out the bound
					RAISE WARNING 'pg_lease: not allowed to end backend %, whose transaction holds the fence lock of lease "%" epoch %',
						writer.pid, name, epoch
						USING HINT = 'GRANT pg_signal_backend TO the role that owns pg_lease''s functions.';
				END;
				IF NOT refused AND (i IS NULL) THEN
					RAISE LOG 'pg_lease: % backend %, whose transaction holds the fence lock of lease "%" epoch %',
						CASE WHEN writer.pid = ANY (ended) THEN 'terminating' ELSE 'cancelling the statement of' END,
						writer.pid, name, epoch;
					PERFORM @extschema@.lease_sql_record_event('evict', name, holder, epoch,
															   expires_at, writer.pid);
				END IF;
			END LOOP;
			IF waited_ms >= timeout_ms + 5000 THEN
				RAISE EXCEPTION 'could not end the grant of lease "%" epoch %: fenced transactions still hold it',
					name, epoch
					USING ERRCODE = '55P03',
						  DETAIL = 'Transactions did not end within 5000 ms of being signalled.',
						  HINT = 'A prepared transaction must be finished with COMMIT PREPARED or ROLLBACK PREPARED.';
			END IF;
		END IF;
		-- Wait in the lock manager's queue, as the C edition does (writers
		-- that come later queue behind this change), until the next step:
		-- the takeover bound, or 50 ms while ending writers.
		slice_ms := CASE WHEN waited_ms < timeout_ms THEN ceil(timeout_ms - waited_ms)::bigint
						 ELSE 50 END;
		BEGIN
			PERFORM set_config('lock_timeout', greatest(slice_ms, 1)::text, true);
			PERFORM pg_advisory_xact_lock(class, key);
			PERFORM set_config('lock_timeout', saved_lock_timeout, true);
			RETURN;
		EXCEPTION WHEN lock_not_available THEN
			NULL;	-- the step's time is up: look again
		END;
	END LOOP;
END
$lock_exclusive$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_lock_exclusive(integer, integer, text, text, bigint, timestamptz) FROM PUBLIC;

CREATE FUNCTION @extschema@.lease_sql_lock_for_change(name text, holder text, epoch bigint,
													  expires_at timestamptz)
	RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $lock_for_change$
BEGIN
	IF epoch IS NOT NULL AND epoch > 0 THEN
		PERFORM @extschema@.lease_sql_lock_exclusive(19539, @extschema@.lease_sql_fence_key(epoch),
													 name, holder, epoch, expires_at);
	END IF;
END
$lock_for_change$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_lock_for_change(text, text, bigint, timestamptz) FROM PUBLIC;

-- A fenced transaction the owner may not end (issue 52, item 5: no
-- pg_signal_backend, as on many managed services) bounds itself: each
-- fenced statement that passes (lease_use that takes the lock, a write
-- the fence lets through) sets the transaction's own
-- idle_in_transaction_session_timeout (SET LOCAL: a user-settable
-- parameter, no right needed, gone at the transaction's end) to the rest
-- of its grant plus pg_lease.takeover_timeout. A writer left idle after
-- its last fenced statement is then ended by its own server by its
-- grant's expiry + takeover_timeout: when a change of holder, which waits
-- takeover_timeout and 5 s more, would have ended it in C, so the lease's
-- next holder gets it within the same bound and the stale writer never
-- commits. Kept when the session's own timeout is already shorter; none
-- with takeover_timeout 0 (a change waits as long as its writers take).
-- A statement still running is not bounded by it (statement_timeout,
-- which the database's owner may set with ALTER DATABASE, is).
--
-- None where the owner (current_user: this is SECURITY DEFINER) may end
-- the session's backend, as pg_terminate_backend decides: a superuser's
-- only as a superuser, any other's with pg_signal_backend or the
-- privileges of its role. That answer is kept for the session in
-- pg_lease_sql.may_end (the session role's name), which the callers read
-- before calling (a grant or revoke of pg_signal_backend counts from the
-- session's next connection). A role could set it, or its own timeout
-- after its last fenced statement, to escape the bound: the bound is for
-- stalled writers, not hostile ones (a writing role can hold the lock by
-- running statements anyway).
CREATE FUNCTION @extschema@.lease_sql_bound_idle(expires_at timestamptz)
	RETURNS void
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $bound_idle$
DECLARE
	takeover_ms bigint;
	bound_ms bigint;
	idle text;
BEGIN
	IF session_user = current_user
	   OR ((pg_has_role(session_user, 'USAGE') OR pg_has_role('pg_signal_backend', 'USAGE'))
		   AND (NOT coalesce((SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = session_user), false)
				OR coalesce((SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = current_user), false))) THEN
		PERFORM set_config('pg_lease_sql.may_end', session_user, false);
		RETURN;
	END IF;
	takeover_ms := @extschema@.lease_sql_setting_ms('pg_lease.takeover_timeout', 1000);
	IF expires_at IS NULL OR takeover_ms = 0 THEN
		RETURN;
	END IF;
	bound_ms := least(greatest(ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::bigint, 0)
					  + takeover_ms, 2147483647);
	-- ours (pg_lease_sql.idle_bound: set by an earlier fenced statement of
	-- this transaction) is replaced; the session's own only by a shorter one
	idle := current_setting('idle_in_transaction_session_timeout');
	IF idle = '0' OR idle = current_setting('pg_lease_sql.idle_bound', true)
	   OR extract(epoch FROM idle::interval) * 1000 > bound_ms THEN
		PERFORM set_config('pg_lease_sql.idle_bound',
						   set_config('idle_in_transaction_session_timeout', bound_ms::text, true), true);
	END IF;
END
$bound_idle$;

-- At install, as the owner: what it lacks, and what holds instead.
DO $install_rights$
BEGIN
	IF NOT pg_catalog.pg_has_role('pg_signal_backend', 'USAGE') THEN
		RAISE WARNING 'pg_lease_sql: role "%" may not end other roles'' sessions (no pg_signal_backend)', current_user
			USING DETAIL = 'A change of holder cannot end a stalled fenced transaction of another role. One left idle '
						   'ends itself (its idle_in_transaction_session_timeout, set by the fence) by its grant''s '
						   'expiry + pg_lease.takeover_timeout, so failover stays bounded; one still running a '
						   'statement keeps the lease''s next holder out until it ends (bounded by statement_timeout '
						   'where set, e.g. ALTER DATABASE ... SET statement_timeout).',
				  HINT = pg_catalog.format('GRANT pg_signal_backend TO %I (as a superuser, or a role with ADMIN on it), '
										   'or CREATE EXTENSION pg_lease_sql where its files are installed.', current_user);
	END IF;
END
$install_rights$;
