-- pg_lease 1.0 -> 1.1: bounded takeover (evict events), lock delay, handover.
\echo Use "ALTER EXTENSION pg_lease UPDATE TO '1.1'" to load this file. \quit

ALTER TABLE @extschema@.leases
	ADD COLUMN lock_delay interval NOT NULL DEFAULT '0' CHECK (lock_delay >= '0');
COMMENT ON COLUMN @extschema@.leases.lock_delay IS
	'after the grant is lost without release, no other holder is granted the lease until this has passed';

ALTER TABLE @extschema@.lease_events ADD COLUMN pid integer;
ALTER TABLE @extschema@.lease_events DROP CONSTRAINT lease_events_event_check;
ALTER TABLE @extschema@.lease_events ADD CONSTRAINT lease_events_event_check
	CHECK (event IN ('acquired', 'takeover', 'released', 'revoked', 'handover', 'evict'));
COMMENT ON TABLE @extschema@.lease_events IS
	'every grant, takeover of an expired lease, release, revoke, handover and eviction, in commit order of id';
COMMENT ON COLUMN @extschema@.lease_events.pid IS
	'evict: the backend that was ended (its holder and epoch are the old grant''s)';

CREATE OR REPLACE VIEW @extschema@.lease_status AS
	SELECT l.name, l.holder, l.epoch, l.acquired_at, l.renewed_at, l.expires_at,
		   l.ttl, l.transitions, l.owner_role,
		   (l.holder IS NOT NULL AND n.now < l.expires_at) AS valid,
		   CASE WHEN l.holder IS NOT NULL AND n.now < l.expires_at
				THEN l.expires_at - n.now ELSE interval '0' END AS remaining,
		   l.lock_delay
	FROM @extschema@.leases l,
		 LATERAL (SELECT pg_catalog.clock_timestamp() AS now) n;
COMMENT ON VIEW @extschema@.lease_status IS
	'leases with valid (held and unexpired now), remaining time by the server clock, and lock delay';

CREATE FUNCTION @extschema@.lease_acquire(name text, holder text, ttl interval, lock_delay interval)
	RETURNS @extschema@.lease_grant
	AS 'MODULE_PATHNAME', 'lease_acquire'
	LANGUAGE C VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_acquire(text, text, interval, interval) IS
	'lease_acquire, recording a lock delay with a new grant: after it is lost without release, others wait that long';

CREATE FUNCTION @extschema@.lease_handover(name text, holder text, epoch bigint, successor text)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'lease_handover'
	LANGUAGE C VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_handover(text, text, bigint, text) IS
	'grant the lease to successor with a new epoch, if (holder, epoch) is its unexpired grant of record; the new epoch, or null';

CREATE OR REPLACE FUNCTION @extschema@.lease_prune(older_than interval, OUT pruned_leases bigint, OUT pruned_events bigint)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $prune$
DECLARE
	cutoff	timestamptz;
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
	-- the name is still larger.
	DELETE FROM @extschema@.leases l
	 WHERE (l.holder IS NULL OR l.expires_at <= clock_timestamp())
	   AND l.expires_at + l.lock_delay < cutoff;
	GET DIAGNOSTICS pruned_leases = ROW_COUNT;
	DELETE FROM @extschema@.lease_events e WHERE e.time < cutoff;
	GET DIAGNOSTICS pruned_events = ROW_COUNT;
END
$prune$;

-- Per-lease counters, kept in shared memory when pg_lease is in
-- shared_preload_libraries (fence rejections abort their transactions, so
-- no table could count them).
CREATE FUNCTION @extschema@.lease_counters_snapshot(
	OUT name text, OUT grants bigint, OUT renewals bigint, OUT releases bigint,
	OUT revocations bigint, OUT handovers bigint, OUT evictions bigint,
	OUT rejected_stale bigint, OUT rejected_not_held bigint, OUT rejected_no_token bigint,
	OUT since timestamptz)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'lease_counters_snapshot'
	LANGUAGE C VOLATILE STRICT
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_counters_snapshot() IS
	'per-lease counters of this database since server start or the last reset (needs shared_preload_libraries)';

CREATE VIEW @extschema@.lease_counters AS
	SELECT * FROM @extschema@.lease_counters_snapshot();
COMMENT ON VIEW @extschema@.lease_counters IS
	'grants, renewals, releases, revocations, handovers, evictions and fence rejections by SQLSTATE (LS001 stale, LS002 not held, LS003 no token), per lease';

CREATE FUNCTION @extschema@.lease_counters_reset()
	RETURNS void
	AS 'MODULE_PATHNAME', 'lease_counters_reset'
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_counters_reset() IS
	'set every lease''s counters to zero (all databases); for administrators';
REVOKE EXECUTE ON FUNCTION @extschema@.lease_counters_reset() FROM PUBLIC;
GRANT SELECT ON @extschema@.lease_counters TO PUBLIC;
