-- The role a lease function acts for: the role that called it (SET ROLE
-- included), not the owner it runs as (SECURITY DEFINER). The C edition
-- reads the outer user id; SQL has only the session's role setting.
-- Inlined into its callers, as the key folds are (10_base.sql).
CREATE FUNCTION @extschema@.lease_sql_caller()
	RETURNS name
	LANGUAGE sql STABLE
	AS $caller$
	SELECT CASE WHEN pg_catalog.current_setting('role') OPERATOR(pg_catalog.=) 'none' THEN session_user
				ELSE pg_catalog.current_setting('role')::pg_catalog.name END
$caller$;

CREATE FUNCTION @extschema@.lease_sql_caller_is_superuser()
	RETURNS boolean
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $superuser$
	SELECT coalesce((SELECT r.rolsuper FROM pg_roles r
					  WHERE r.rolname = @extschema@.lease_sql_caller()), false)
$superuser$;

-- Writes of the lease functions are durable before they are acknowledged,
-- as in the C edition: synchronous_commit at least remote_write.
CREATE FUNCTION @extschema@.lease_sql_durable()
	RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $durable$
BEGIN
	IF current_setting('synchronous_commit') IN ('off', 'local') THEN
		PERFORM set_config('synchronous_commit', 'on', true);
	END IF;
END
$durable$;

-- The WAL timeline this server writes on, as extension/epoch.c reads it
-- (the insertion timeline): from the name of the current WAL file (its
-- first 8 hex digits), which any role may compute on a primary; else from
-- pg_control_checkpoint() where the role may read it. Never the last
-- checkpoint's alone: after a promotion it names the old timeline until
-- the end-of-recovery checkpoint completes, and a promoted standby that
-- missed the newest grants would draw their epochs again (issue 52).
CREATE FUNCTION @extschema@.lease_sql_timeline()
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $timeline$
BEGIN
	BEGIN
		RETURN ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::bigint;
	EXCEPTION WHEN insufficient_privilege OR undefined_function OR object_not_in_prerequisite_state THEN
		RETURN (SELECT c.timeline_id FROM pg_control_checkpoint() c);
	END;
END
$timeline$;

CREATE FUNCTION @extschema@.lease_sql_system()
	RETURNS bigint
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $system$
BEGIN
	RETURN (SELECT s.system_identifier FROM pg_control_system() s);
EXCEPTION WHEN insufficient_privilege THEN
	RETURN 0;	-- unknown: the mark's table incarnation and timeline still move the era
END
$system$;

-- The next epoch, as extension/epoch.c draws it: the era (timeline plus
-- the base kept in lease_epoch_mark, so epochs never go back after
-- pg_upgrade, a restore or pg_resetwal) above 47 bits of the one counter.
-- Callers draw an epoch only while they hold the lease row's lock.
CREATE FUNCTION @extschema@.lease_sql_next_epoch()
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $next_epoch$
DECLARE
	timeline bigint := @extschema@.lease_sql_timeline();
	system bigint := @extschema@.lease_sql_system();
	mark_table oid := '@extschema@.lease_epoch_mark'::regclass;
	mark record;
	marked boolean;
	base bigint;
	era bigint;
	counter bigint;
BEGIN
	FOR attempt IN 1..2 LOOP
		SELECT m.system_identifier, m.mark_table, m.base, m.high INTO mark
		  FROM @extschema@.lease_epoch_mark m;
		marked := FOUND;
		IF NOT marked THEN
			-- no mark: the era of the highest epoch recorded
			SELECT coalesce(max(e) >> 47, 0) INTO base
			  FROM (SELECT max(l.epoch) AS e FROM @extschema@.leases l
					UNION ALL SELECT max(v.epoch) FROM @extschema@.lease_events v) r;
		ELSIF mark.system_identifier <> system OR mark.mark_table <> mark_table
			  OR mark.base + timeline < mark.high THEN
			base := mark.high;	-- another system, a restore, or the timeline went back
		ELSE
			base := mark.base;
		END IF;
		EXIT WHEN marked AND mark.system_identifier = system AND mark.mark_table = mark_table
			  AND mark.base = base AND mark.high >= base + timeline;
		IF attempt = 1 THEN
			-- the mark moves: under a lock of its own, so two first grants agree
			PERFORM pg_advisory_xact_lock(19525, 0);
			CONTINUE;
		END IF;
		INSERT INTO @extschema@.lease_epoch_mark AS m
			   (one, system_identifier, mark_table, base, high, recorded_at)
		VALUES (true, system, mark_table, base,
				greatest(CASE WHEN marked THEN mark.high ELSE 0 END, base + timeline),
				clock_timestamp())
		ON CONFLICT (one) DO UPDATE
		   SET system_identifier = excluded.system_identifier, mark_table = excluded.mark_table,
			   base = excluded.base, high = excluded.high, recorded_at = excluded.recorded_at;
	END LOOP;
	era := base + timeline;
	IF era > 65535 THEN
		RAISE EXCEPTION 'epoch era % is too large for pg_lease epochs', era
			USING ERRCODE = '54000',
				  DETAIL = format('Epochs keep the era (WAL timeline %s plus the base recorded in lease_epoch_mark) in 16 bits.', timeline);
	END IF;
	counter := nextval('@extschema@.lease_epoch_seq');
	RETURN (era << 47) | counter;
END
$next_epoch$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_next_epoch() FROM PUBLIC;
