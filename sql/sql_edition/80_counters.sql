-- Counters. The C edition counts in shared memory, also the fence's
-- rejections, which abort their transactions. Without C there is no such
-- memory: grants, releases, revocations, handovers and evictions are
-- counted from lease_events since the last reset (as far back as
-- pg_lease.event_retention keeps them); renewals and rejections, which
-- leave no row, are null.
CREATE TABLE @extschema@.lease_sql_counters_reset (
	one			boolean PRIMARY KEY DEFAULT true CHECK (one),
	reset_at	timestamptz NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_sql_counters_reset', '');
REVOKE ALL ON @extschema@.lease_sql_counters_reset FROM PUBLIC;
GRANT SELECT ON @extschema@.lease_sql_counters_reset TO PUBLIC;

CREATE FUNCTION @extschema@.lease_counters_snapshot(
	LANGUAGE sql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
	AS $counters$
	SELECT e.name,
		   count(*) FILTER (WHERE e.event IN ('acquired', 'takeover')),
		   NULL::bigint,
		   count(*) FILTER (WHERE e.event = 'released'),
		   count(*) FILTER (WHERE e.event = 'revoked'),
		   count(*) FILTER (WHERE e.event = 'handover'),
		   count(*) FILTER (WHERE e.event = 'evict'),
		   NULL::bigint, NULL::bigint, NULL::bigint,
		   s.since
	  FROM @extschema@.lease_events e,
		   (SELECT coalesce((SELECT r.reset_at FROM @extschema@.lease_sql_counters_reset r),
							'-infinity'::timestamptz) AS since) s
	 WHERE e.time >= s.since
	 GROUP BY e.name, s.since
	 ORDER BY e.name
$counters$;

CREATE FUNCTION @extschema@.lease_counters_reset()
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $counters_reset$
BEGIN
	INSERT INTO @extschema@.lease_sql_counters_reset AS r (one, reset_at)
	VALUES (true, clock_timestamp())
	ON CONFLICT (one) DO UPDATE SET reset_at = excluded.reset_at;
END
$counters_reset$;
