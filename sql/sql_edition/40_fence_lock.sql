-- Before a change of holder (a grant of a free or expired lease, release,
-- revoke, handover, prune): the ending grant's fence lock, exclusively,
-- before the change commits. It waits for that grant's fenced
-- transactions (each holds the lock shared) at most
-- pg_lease.takeover_timeout (0: as long as they take), then ends them as
-- extension/evict.c does (idle in transaction: terminated; running:
-- cancelled, terminated 250 ms later), each recorded once as an evict
-- event; 5 s after that the change fails with 55P03. Ending another role's
-- backends needs pg_signal_backend (a superuser's, superuser): without it
-- the change waits out that bound and fails, and the stalled writer keeps
-- the lease's next holder out until its transaction ends.
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
			FOR writer IN
				SELECT l.pid, a.state
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
					IF writer.state LIKE 'idle in transaction%'
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
