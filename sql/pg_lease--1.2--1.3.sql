-- pg_lease 1.2 -> 1.3: the fence lock moves into the lock manager.
\echo Use "ALTER EXTENSION pg_lease UPDATE TO '1.3'" to load this file. \quit

-- 1.3: the fence lock lives in the lock manager (extension/fence_lock.c).
-- When this database's pg_lease was updated to each version: until every
-- session that began before the update to 1.3 has ended, a 1.2 library may
-- still run in one of them, so fenced writers keep 1.2's row lock as well
-- (extension/compat.c).  Empty after CREATE EXTENSION.
CREATE TABLE @extschema@.lease_upgrades (
	version		text PRIMARY KEY,
	upgraded_at timestamptz NOT NULL
);
COMMENT ON TABLE @extschema@.lease_upgrades IS
	'when this database''s pg_lease was updated to each version (ALTER EXTENSION ... UPDATE)';
REVOKE ALL ON @extschema@.lease_upgrades FROM PUBLIC;
GRANT SELECT ON @extschema@.lease_upgrades TO PUBLIC;

-- Who writes under which grant: the holders and waiters of the fence locks
-- (advisory tags of class 0x4C53 = 19539: database, epoch high and low 32
-- bits).  A change of holder waits for the writers of the grant it ends.
CREATE VIEW @extschema@.lease_writers AS
	SELECT l.name, k.pid, k.epoch, k.granted, a.xact_start
	FROM (SELECT p.pid, p.granted,
				 ((p.classid::bigint OPERATOR(pg_catalog.<<) 32) OPERATOR(pg_catalog.|) p.objid::bigint) AS epoch
			FROM pg_catalog.pg_locks p
		   WHERE p.locktype OPERATOR(pg_catalog.=) 'advisory'
			 AND p.objsubid OPERATOR(pg_catalog.=) 19539
			 AND p.mode OPERATOR(pg_catalog.=) 'ShareLock'
			 AND p.database OPERATOR(pg_catalog.=)
				 (SELECT d.oid FROM pg_catalog.pg_database d
				   WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())) k
	LEFT JOIN @extschema@.leases l ON l.epoch OPERATOR(pg_catalog.=) k.epoch
	LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) k.pid;
COMMENT ON VIEW @extschema@.lease_writers IS
	'one row per backend holding (granted) or waiting for a lease''s fence lock: the lease, the epoch of the grant, the transaction''s start';
GRANT SELECT ON @extschema@.lease_writers TO PUBLIC;

-- lease_prune deletes the rows of long-expired leases; a writer of such a
-- grant may still be open (stalled), so its fence lock is taken first, as
-- a change of holder does (bounded by pg_lease.takeover_timeout).
CREATE FUNCTION @extschema@.lease_end_grant_writers(name text, holder text, epoch bigint, expires_at timestamptz)
	RETURNS void
	AS 'MODULE_PATHNAME', 'lease_end_grant_writers'
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_end_grant_writers(text, text, bigint, timestamptz) IS
	'internal (lease_prune): wait for, then end, the fenced transactions of a grant, as a change of holder does';
REVOKE EXECUTE ON FUNCTION @extschema@.lease_end_grant_writers(text, text, bigint, timestamptz) FROM PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.lease_prune(older_than interval, OUT pruned_leases bigint, OUT pruned_events bigint)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $prune$
DECLARE
	cutoff	timestamptz;
	gone	record;
BEGIN
	IF older_than IS NULL THEN
		RAISE EXCEPTION 'older_than must not be null' USING ERRCODE = '22004';
	END IF;
	IF older_than < interval '0' THEN
		RAISE EXCEPTION 'older_than must not be negative' USING ERRCODE = '22023';
	END IF;
	cutoff := clock_timestamp() - older_than;
	-- A lease that has been free or expired (and past its lock delay) for
	-- that long; its epoch lives on in the one counter, so a later grant of
	-- the name is still larger.  Its row is locked, then its grant's fence
	-- lock taken, so no fenced write of it commits after the row is gone.
	pruned_leases := 0;
	FOR gone IN
		SELECT l.name, l.holder, l.epoch, l.expires_at FROM @extschema@.leases l
		 WHERE (l.holder IS NULL OR l.expires_at <= clock_timestamp())
		   AND l.expires_at + l.lock_delay < cutoff
		 FOR UPDATE
	LOOP
		PERFORM @extschema@.lease_end_grant_writers(gone.name, gone.holder, gone.epoch, gone.expires_at);
		DELETE FROM @extschema@.leases l WHERE l.name = gone.name;
		pruned_leases := pruned_leases + 1;
	END LOOP;
	DELETE FROM @extschema@.lease_events e WHERE e.time < cutoff;
	GET DIAGNOSTICS pruned_events = ROW_COUNT;
END
$prune$;
COMMENT ON FUNCTION @extschema@.lease_prune(interval) IS
	'delete leases free or expired for longer than older_than, and older events; for administrators';

-- Sessions that began before now may run the 1.2 library (compat.c).
INSERT INTO @extschema@.lease_upgrades VALUES ('1.3', pg_catalog.clock_timestamp());
