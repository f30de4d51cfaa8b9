-- pg_lease 1.5: leases with fencing tokens, inside PostgreSQL.
--
-- The whole contract of the current version in one file (docs/sql.md says
-- what each object does); the update scripts pg_lease--A--B.sql beside it
-- bring older installs to the same objects (tests/server/upgrade.sh
-- compares them).  The SQL edition takes its shared DDL from this file.
\echo Use "CREATE EXTENSION pg_lease" to load this file. \quit

-- One counter for every lease, so an epoch names exactly one grant.  The C
-- code puts the WAL timeline above its 47 bits.
CREATE SEQUENCE @extschema@.lease_epoch_seq
	AS bigint MINVALUE 1 MAXVALUE 140737488355327 NO CYCLE;
COMMENT ON SEQUENCE @extschema@.lease_epoch_seq IS
	'counter behind every epoch; never reset it';

CREATE TABLE @extschema@.leases (
	name		text PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 255),
	holder		text CHECK (octet_length(holder) BETWEEN 1 AND 255),
	epoch		bigint NOT NULL CHECK (epoch > 0),
	acquired_at timestamptz NOT NULL,
	renewed_at	timestamptz NOT NULL,
	expires_at	timestamptz NOT NULL,
	ttl			interval NOT NULL,
	transitions bigint NOT NULL DEFAULT 0,
	owner_role	name NOT NULL,
	lock_delay	interval NOT NULL DEFAULT '0' CHECK (lock_delay >= '0')
) WITH (fillfactor = 50);		-- room for HOT renewals
-- for the per-role limit on lease names (pg_lease.max_leases_per_role)
CREATE INDEX leases_owner_role_idx ON @extschema@.leases (owner_role);
COMMENT ON TABLE @extschema@.leases IS
	'one row per lease; written only through lease_acquire, lease_renew, lease_release and lease_revoke';
COMMENT ON COLUMN @extschema@.leases.name IS 'lease name, 1 to 255 bytes';
COMMENT ON COLUMN @extschema@.leases.holder IS 'holder of the latest grant, null when free';
COMMENT ON COLUMN @extschema@.leases.epoch IS 'fencing token of the latest grant; never goes back';
COMMENT ON COLUMN @extschema@.leases.acquired_at IS 'server time of the latest grant';
COMMENT ON COLUMN @extschema@.leases.renewed_at IS 'server time of the latest renew or grant';
COMMENT ON COLUMN @extschema@.leases.expires_at IS 'the lease is valid while clock_timestamp() < expires_at';
COMMENT ON COLUMN @extschema@.leases.ttl IS 'ttl of the latest grant or renew';
COMMENT ON COLUMN @extschema@.leases.transitions IS 'how many times the holder changed';
COMMENT ON COLUMN @extschema@.leases.owner_role IS 'database role that made the latest grant';
COMMENT ON COLUMN @extschema@.leases.lock_delay IS
	'after the grant is lost without release, no other holder is granted the lease until this has passed';

CREATE TABLE @extschema@.lease_events (
	id			bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	time		timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
	event		text NOT NULL CONSTRAINT lease_events_event_check
		CHECK (event IN ('acquired', 'takeover', 'released', 'revoked', 'handover', 'evict')),
	name		text NOT NULL,
	holder		text,
	epoch		bigint NOT NULL,
	expires_at	timestamptz,
	role		name NOT NULL,
	pid			integer
);
-- per-lease history, and its retention (pg_lease.event_retention)
CREATE INDEX lease_events_name_time_idx ON @extschema@.lease_events (name, time);
COMMENT ON TABLE @extschema@.lease_events IS
	'every grant, takeover of an expired lease, release, revoke, handover and eviction, in commit order of id';
COMMENT ON COLUMN @extschema@.lease_events.pid IS
	'evict: the backend that was ended (its holder and epoch are the old grant''s)';

-- pg_dump keeps leases, history and the counter, so epochs survive a restore.
SELECT pg_catalog.pg_extension_config_dump('@extschema@.leases', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_events', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_epoch_seq', '');
-- The history's ids too: a restore would start them again at 1, and every
-- grant would then fail on lease_events_pkey.
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_events_id_seq', '');

-- The epoch mark (extension/epoch.c).  pg_upgrade, a dump and restore
-- onto a new cluster and pg_resetwal start again at timeline 1, whose bits
-- are the epochs' high bits: the mark records the system that issued
-- epochs and the incarnation of this table (its oid: a restore, in place or
-- elsewhere, creates the table again), the base added to the timeline, and
-- the highest era used, so every later epoch is above every earlier one.
-- One row at most, written by the grant functions only; dumped with the
-- extension's data.
CREATE TABLE @extschema@.lease_epoch_mark (
	one			boolean PRIMARY KEY DEFAULT true CHECK (one),
	system_identifier bigint NOT NULL,
	mark_table	oid NOT NULL,
	base		bigint NOT NULL CHECK (base >= 0),
	high		bigint NOT NULL CHECK (high > 0),
	recorded_at timestamptz NOT NULL
);
COMMENT ON TABLE @extschema@.lease_epoch_mark IS
	'the era (high bits) of the epochs this database issues: timeline plus base, and the highest era used; never edit it';
COMMENT ON COLUMN @extschema@.lease_epoch_mark.system_identifier IS
	'the system identifier (pg_control_system(), as a signed bigint) of the cluster that recorded the mark';
COMMENT ON COLUMN @extschema@.lease_epoch_mark.mark_table IS
	'the oid this table had when the mark was recorded: another one means the data was restored';
COMMENT ON COLUMN @extschema@.lease_epoch_mark.base IS
	'added to the WAL timeline to make the era: moved to the highest era when the system or timeline changed under the data';
COMMENT ON COLUMN @extschema@.lease_epoch_mark.high IS
	'the highest era any epoch of this database used';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_epoch_mark', '');
REVOKE ALL ON @extschema@.lease_epoch_mark FROM PUBLIC;
GRANT SELECT ON @extschema@.lease_epoch_mark TO PUBLIC;

CREATE VIEW @extschema@.lease_status AS
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

CREATE TYPE @extschema@.lease_grant AS (
	acquired	boolean,
	epoch		bigint,
	holder		text,
	expires_at	timestamptz
);
COMMENT ON TYPE @extschema@.lease_grant IS 'result of lease_acquire';

CREATE FUNCTION @extschema@.lease_acquire(name text, holder text, ttl interval)
	RETURNS @extschema@.lease_grant
	AS 'MODULE_PATHNAME', 'lease_acquire'
	LANGUAGE C VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_acquire(text, text, interval) IS
	'grant a free or expired lease with a new epoch, extend one the holder has, or report its holder';

CREATE FUNCTION @extschema@.lease_acquire(name text, holder text, ttl interval, lock_delay interval)
	RETURNS @extschema@.lease_grant
	AS 'MODULE_PATHNAME', 'lease_acquire'
	LANGUAGE C VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_acquire(text, text, interval, interval) IS
	'lease_acquire, recording a lock delay with a new grant: after it is lost without release, others wait that long';

CREATE FUNCTION @extschema@.lease_renew(name text, holder text, epoch bigint, ttl interval DEFAULT NULL)
	RETURNS timestamptz
	AS 'MODULE_PATHNAME', 'lease_renew'
	LANGUAGE C VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_renew(text, text, bigint, interval) IS
	'extend a lease the holder still has at this epoch; the new expiry, or null when it is lost';

CREATE FUNCTION @extschema@.lease_renew_many(names text[], holder text, epochs bigint[], ttl interval DEFAULT NULL)
	RETURNS TABLE (name text, expires_at timestamptz)
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $renew_many$
BEGIN
	IF names IS NULL OR holder IS NULL OR epochs IS NULL THEN
		RAISE EXCEPTION 'lease_renew_many arguments must not be null' USING ERRCODE = '22004';
	END IF;
	IF cardinality(names) <> cardinality(epochs) THEN
		RAISE EXCEPTION 'names and epochs must have the same length'
			USING ERRCODE = '22023',
				  DETAIL = format('%s names, %s epochs.', cardinality(names), cardinality(epochs));
	END IF;
	-- One statement, so one commit renews them all: a process holding many
	-- leases needs one durable commit per renewal round, not per lease.
	RETURN QUERY
		SELECT t.n, @extschema@.lease_renew(t.n, holder, t.e, ttl)
		  FROM unnest(names, epochs) WITH ORDINALITY AS t(n, e, i)
		 ORDER BY t.i;
END
$renew_many$;
COMMENT ON FUNCTION @extschema@.lease_renew_many(text[], text, bigint[], interval) IS
	'lease_renew for many leases of one holder in one statement; expires_at is null for each one lost';

CREATE FUNCTION @extschema@.lease_release(name text, holder text, epoch bigint)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'lease_release'
	LANGUAGE C VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_release(text, text, bigint) IS
	'free the lease at once if (holder, epoch) is its grant of record';

CREATE FUNCTION @extschema@.lease_handover(name text, holder text, epoch bigint, successor text)
	RETURNS bigint
	AS 'MODULE_PATHNAME', 'lease_handover'
	LANGUAGE C VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_handover(text, text, bigint, text) IS
	'grant the lease to successor with a new epoch, if (holder, epoch) is its unexpired grant of record; the new epoch, or null';

CREATE FUNCTION @extschema@.lease_revoke(name text)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'lease_revoke'
	LANGUAGE C VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_revoke(text) IS
	'free the lease at once, whoever holds it; for administrators';
REVOKE EXECUTE ON FUNCTION @extschema@.lease_revoke(text) FROM PUBLIC;

CREATE FUNCTION @extschema@.lease_use(name text, epoch bigint)
	RETURNS void
	AS 'MODULE_PATHNAME', 'lease_use'
	LANGUAGE C VOLATILE
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_use(text, bigint) IS
	'declare the fencing token of this transaction''s writes to tables fenced by the lease';

-- No SET clause here: it would cost a GUC save and restore for every row.
-- The trigger runs no query that a search_path could redirect.
CREATE FUNCTION @extschema@.lease_fence_trigger()
	RETURNS trigger
	AS 'MODULE_PATHNAME', 'lease_fence_trigger'
	LANGUAGE C;
COMMENT ON FUNCTION @extschema@.lease_fence_trigger() IS
	'fence trigger installed by lease_fence; refuses writes whose token is not the current epoch';

CREATE FUNCTION @extschema@.lease_fence(tbl regclass, lease text, epoch_column name DEFAULT 'epoch',
										store text DEFAULT NULL)
	RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $fence$
DECLARE
	rel		record;
	coltype oid;
	part	regclass;
	args	text;
BEGIN
	IF tbl IS NULL OR lease IS NULL OR epoch_column IS NULL THEN
		RAISE EXCEPTION 'lease_fence arguments must not be null' USING ERRCODE = '22004';
	END IF;
	IF octet_length(lease) < 1 THEN
		RAISE EXCEPTION 'lease name must not be empty' USING ERRCODE = '22023';
	ELSIF octet_length(lease) > 255 THEN
		RAISE EXCEPTION 'lease name must be at most 255 bytes long'
			USING ERRCODE = '22023', DETAIL = format('The value is %s bytes long.', octet_length(lease));
	END IF;
	-- 1.4: a lease of another database (a downstream fence, by floor)
	IF store IS NOT NULL THEN
		IF octet_length(store) < 1 THEN
			RAISE EXCEPTION 'lease store must not be empty' USING ERRCODE = '22023';
		ELSIF octet_length(store) > 255 THEN
			RAISE EXCEPTION 'lease store must be at most 255 bytes long'
				USING ERRCODE = '22023', DETAIL = format('The value is %s bytes long.', octet_length(store));
		ELSIF store = @extschema@.lease_store_id() THEN
			RAISE EXCEPTION 'lease store "%" is this database', store
				USING ERRCODE = '22023', HINT = 'Omit store to fence a table by a lease of this database.';
		END IF;
	END IF;

	SELECT c.relowner, c.relkind INTO rel FROM pg_class c WHERE c.oid = tbl;
	IF NOT pg_has_role(current_user, rel.relowner, 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = '42501';
	END IF;
	IF rel.relkind NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '"%" is not a table', tbl USING ERRCODE = '42809';
	END IF;

	SELECT a.atttypid INTO coltype FROM pg_attribute a
	 WHERE a.attrelid = tbl AND a.attname = epoch_column AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of table % does not exist', epoch_column, tbl USING ERRCODE = '42703';
	END IF;
	IF coltype <> 'bigint'::regtype THEN
		RAISE EXCEPTION 'epoch column "%" of table % must be bigint', epoch_column, tbl
			USING ERRCODE = '22023', DETAIL = format('It is %s.', coltype::regtype);
	END IF;

	-- The trigger's arguments: lease, column, and the store for a downstream fence.
	args := format('%L, %L', lease, epoch_column);
	IF store IS NOT NULL THEN
		args := args || format(', %L', store);
	END IF;
	-- Replace any previous fence, in this transaction, so fencing is idempotent.
	PERFORM @extschema@.lease_unfence(tbl);
	-- Row triggers on a partitioned table are cloned to every partition,
	-- also to partitions attached later.
	EXECUTE format('CREATE TRIGGER pg_lease_fence BEFORE INSERT OR UPDATE OR DELETE ON %s'
				   ' FOR EACH ROW EXECUTE FUNCTION %s.lease_fence_trigger(%s)',
				   tbl, '@extschema@', args);
	-- Statement triggers are not cloned: TRUNCATE of a partition fires only
	-- its own, so each existing partition gets one (run lease_fence again
	-- after attaching partitions to cover their TRUNCATE too).
	FOR part IN SELECT tbl UNION SELECT relid FROM pg_partition_tree(tbl) LOOP
		EXECUTE format('CREATE TRIGGER pg_lease_fence_truncate BEFORE TRUNCATE ON %s'
					   ' FOR EACH STATEMENT EXECUTE FUNCTION %s.lease_fence_trigger(%s)',
					   part, '@extschema@', args);
	END LOOP;
END
$fence$;
COMMENT ON FUNCTION @extschema@.lease_fence(regclass, text, name, text) IS
	'put a table under a lease''s fence: writes must carry the lease''s current epoch (store NULL), or at least the floor of a lease of another database';

CREATE FUNCTION @extschema@.lease_unfence(tbl regclass)
	RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $unfence$
DECLARE
	owner	oid;
	part	regclass;
BEGIN
	IF tbl IS NULL THEN
		RAISE EXCEPTION 'lease_unfence argument must not be null' USING ERRCODE = '22004';
	END IF;
	SELECT c.relowner INTO owner FROM pg_class c WHERE c.oid = tbl;
	IF NOT pg_has_role(current_user, owner, 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = '42501';
	END IF;
	IF EXISTS (SELECT FROM pg_trigger WHERE tgrelid = tbl AND tgname = 'pg_lease_fence') THEN
		EXECUTE format('DROP TRIGGER pg_lease_fence ON %s', tbl);
	END IF;
	FOR part IN SELECT t.tgrelid FROM pg_trigger t
				 WHERE t.tgname = 'pg_lease_fence_truncate'
				   AND t.tgrelid IN (SELECT tbl UNION SELECT relid FROM pg_partition_tree(tbl)) LOOP
		EXECUTE format('DROP TRIGGER pg_lease_fence_truncate ON %s', part);
	END LOOP;
END
$unfence$;
COMMENT ON FUNCTION @extschema@.lease_unfence(regclass) IS
	'remove a table''s fence';

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


CREATE FUNCTION @extschema@.lease_prune(older_than interval, OUT pruned_leases bigint, OUT pruned_events bigint)
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
REVOKE EXECUTE ON FUNCTION @extschema@.lease_prune(interval) FROM PUBLIC;

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

-- Everyone may look; only the functions above may write.
REVOKE ALL ON @extschema@.leases, @extschema@.lease_events, @extschema@.lease_epoch_seq FROM PUBLIC;
GRANT SELECT ON @extschema@.leases, @extschema@.lease_events, @extschema@.lease_status TO PUBLIC;

-- Lease groups (the C++ group_member, client/include/pglease/internal/group_names.hpp):
-- every lease of a group is named
--   'pglease:group/' || <group, '%' as %25 and '/' as %2F> || '/member/' || <weight> || '/' || <identity>
--   'pglease:group/' || <group, escaped alike> || '/shard/' || <shard>
-- These views take the names apart; everything else comes from lease_status.
CREATE VIEW @extschema@.lease_group_leases AS
	SELECT p.group_name, p.kind,
		   CASE WHEN p.kind = 'member' THEN substr(p.tail, length(split_part(p.tail, '/', 1)) + 2) END AS member,
		   CASE WHEN p.kind = 'member' AND split_part(p.tail, '/', 1) ~ '^([1-9][0-9]{0,2}|1000)$'
				THEN split_part(p.tail, '/', 1)::integer END AS weight,
		   CASE WHEN p.kind = 'shard' THEN p.tail END AS shard,
		   s.holder, s.epoch, s.expires_at, s.valid, s.remaining, s.name AS lease_name
	FROM @extschema@.lease_status s,
		 LATERAL (SELECT substr(s.name, 15) AS body) b,
		 LATERAL (SELECT split_part(b.body, '/', 1) AS escaped,
						 split_part(b.body, '/', 2) AS kind) k,
		 LATERAL (SELECT replace(replace(k.escaped, '%2F', '/'), '%25', '%') AS group_name,
						 k.kind,
						 substr(b.body, length(k.escaped) + length(k.kind) + 3) AS tail) p
	WHERE starts_with(s.name, 'pglease:group/')
	  AND k.escaped <> '' AND k.escaped !~ '%(?!25|2F)'
	  AND p.tail <> ''
	  AND (k.kind = 'shard'
		   OR (k.kind = 'member' AND p.tail ~ '^([1-9][0-9]{0,2}|1000)/.'));
COMMENT ON VIEW @extschema@.lease_group_leases IS
	'every lease of a lease group, its name taken apart: group, kind (member or shard), member and weight, or shard';

CREATE VIEW @extschema@.lease_group_members AS
	SELECT m.group_name, m.member, m.weight,
		   (m.valid AND m.holder = m.member) AS valid,
		   m.epoch, m.expires_at, m.remaining,
		   (SELECT count(*) FROM @extschema@.lease_group_leases sh
			 WHERE sh.kind = 'shard' AND sh.group_name = m.group_name
			   AND sh.valid AND sh.holder = m.member) AS shards,
		   m.lease_name
	FROM @extschema@.lease_group_leases m
	WHERE m.kind = 'member';
COMMENT ON VIEW @extschema@.lease_group_members IS
	'members of lease groups: valid while the membership lease is held; shards = valid shard leases the member holds';

CREATE VIEW @extschema@.lease_group_shards AS
	SELECT g.group_name, g.shard, g.holder, g.epoch, g.expires_at, g.valid, g.remaining, g.lease_name
	FROM @extschema@.lease_group_leases g
	WHERE g.kind = 'shard';
COMMENT ON VIEW @extschema@.lease_group_shards IS
	'shards of lease groups: the member holding each (valid while held and unexpired), its epoch and expiry';

GRANT SELECT ON @extschema@.lease_group_leases, @extschema@.lease_group_members,
	@extschema@.lease_group_shards TO PUBLIC;

-- When this database's pg_lease was updated to each version: until every
-- session that began before the update to 1.3 has ended, a 1.2 library may
-- still run in one of them, so fenced writers keep 1.2's row lock as well
-- (extension/fence_compat.c).  Empty after CREATE EXTENSION.
CREATE TABLE @extschema@.lease_upgrades (
	version		text PRIMARY KEY,
	upgraded_at timestamptz NOT NULL
);
COMMENT ON TABLE @extschema@.lease_upgrades IS
	'when this database''s pg_lease was updated to each version (ALTER EXTENSION ... UPDATE)';
REVOKE ALL ON @extschema@.lease_upgrades FROM PUBLIC;
GRANT SELECT ON @extschema@.lease_upgrades TO PUBLIC;

-- Downstream floors.  A database that does not hold a lease can still
-- fence its tables by it: it keeps, per (lease store, lease name), the
-- highest epoch it has seen, and refuses writes below it
-- (extension/floors.c).  Written only through lease_raise and the
-- fence trigger, as the table's owner.
CREATE TABLE @extschema@.lease_floor_rows (
	store		text NOT NULL,
	name		text NOT NULL,
	epoch		bigint NOT NULL CHECK (epoch > 0),
	raised_at	timestamptz NOT NULL,
	PRIMARY KEY (store, name)
);
COMMENT ON TABLE @extschema@.lease_floor_rows IS
	'per (lease store, lease name): the highest epoch this database has seen; see view lease_floors';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_floor_rows', '');
REVOKE ALL ON @extschema@.lease_floor_rows FROM PUBLIC;

CREATE VIEW @extschema@.lease_floors AS
	SELECT store, name, epoch, raised_at FROM @extschema@.lease_floor_rows;
COMMENT ON VIEW @extschema@.lease_floors IS
	'downstream fences: the highest epoch of each (lease store, lease) that this database has seen';
GRANT SELECT ON @extschema@.lease_floors TO PUBLIC;

CREATE FUNCTION @extschema@.lease_store_id()
	RETURNS text
	AS 'MODULE_PATHNAME', 'lease_store_id'
	LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION @extschema@.lease_store_id() IS
	'this database''s identity as a lease store: pg_lease.store_id, or the system identifier and the database name';

-- Raising a floor shuts out every holder of a lower token in this database,
-- so it is not for everyone: EXECUTE is granted per role.
CREATE FUNCTION @extschema@.lease_raise(store text, name text, epoch bigint)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'lease_raise'
	LANGUAGE C VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.lease_raise(text, text, bigint) IS
	'raise the floor of (store, name) to epoch, after the open fenced transactions of lower tokens end (bounded by pg_lease.takeover_timeout)';
REVOKE EXECUTE ON FUNCTION @extschema@.lease_raise(text, text, bigint) FROM PUBLIC;

-- Who writes under which grant: the holders and waiters of the fence locks
-- (advisory tags of class 0x4C53 = 19539: database, epoch high and low 32
-- bits; a change of holder waits for the writers of the grant it ends), and
-- of the floor locks of downstream fences (class 0x4C46 = 19526, keyed by a
-- hash of store, name and epoch that hashtextextended computes as
-- extension/floors.c does).  Only the writers of the current floor
-- can be named; a writer of another token shows with name and epoch null.
CREATE VIEW @extschema@.lease_writers AS
	WITH locks AS (
		SELECT p.pid, p.granted, p.objsubid, p.classid, p.objid::bigint AS low,
			   ((p.classid::bigint OPERATOR(pg_catalog.<<) 32) OPERATOR(pg_catalog.|) p.objid::bigint) AS key
		  FROM pg_catalog.pg_locks p
		 WHERE p.locktype OPERATOR(pg_catalog.=) 'advisory'
		   AND (p.objsubid OPERATOR(pg_catalog.=) ANY ('{19539,19526}'::integer[])
				OR (p.objsubid OPERATOR(pg_catalog.=) 2
					AND p.classid OPERATOR(pg_catalog.=) ANY ('{19539,19526}'::oid[])))
		   AND p.mode OPERATOR(pg_catalog.=) 'ShareLock'
		   AND p.database OPERATOR(pg_catalog.=)
			   (SELECT d.oid FROM pg_catalog.pg_database d
				 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()))
	SELECT l.name, k.pid, k.key AS epoch, k.granted, a.xact_start, NULL::text AS store
	  FROM locks k
	  LEFT JOIN @extschema@.leases l ON l.epoch OPERATOR(pg_catalog.=) k.key
	  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) k.pid
	 WHERE k.objsubid OPERATOR(pg_catalog.=) 19539
	UNION ALL
	SELECT f.name, k.pid, f.epoch, k.granted, a.xact_start, f.store
	  FROM locks k
	  LEFT JOIN @extschema@.lease_floor_rows f
		ON pg_catalog.hashtextextended(f.name COLLATE "C",
			   pg_catalog.hashtextextended(f.store COLLATE "C", f.epoch)) OPERATOR(pg_catalog.=) k.key
	  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) k.pid
	 WHERE k.objsubid OPERATOR(pg_catalog.=) 19526
	-- The SQL edition's locks (sql.md, "The SQL edition"): two-key advisory
	-- locks of first key 19539 (fence) or 19526 (floor), the second the
	-- epoch (or the floor's hash) folded to 32 bits: the epoch shown is the
	-- current grant's (or floor's) that folds alike, null when none does.
	UNION ALL
	SELECT l.name, k.pid, l.epoch, k.granted, a.xact_start, NULL::text
	  FROM locks k
	  LEFT JOIN @extschema@.leases l
		ON ((l.epoch OPERATOR(pg_catalog.#) (l.epoch OPERATOR(pg_catalog.>>) 32))
			OPERATOR(pg_catalog.&) 4294967295) OPERATOR(pg_catalog.=) k.low
	  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) k.pid
	 WHERE k.objsubid OPERATOR(pg_catalog.=) 2 AND k.classid OPERATOR(pg_catalog.=) 19539::oid
	UNION ALL
	SELECT f.name, k.pid, f.epoch, k.granted, a.xact_start, f.store
	  FROM locks k
	  LEFT JOIN (SELECT r.store, r.name, r.epoch,
					pg_catalog.hashtextextended(r.name COLLATE "C",
						pg_catalog.hashtextextended(r.store COLLATE "C", r.epoch)) AS h
			  FROM @extschema@.lease_floor_rows r) f
		ON ((f.h OPERATOR(pg_catalog.#) (f.h OPERATOR(pg_catalog.>>) 32))
			OPERATOR(pg_catalog.&) 4294967295) OPERATOR(pg_catalog.=) k.low
	  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) k.pid
	 WHERE k.objsubid OPERATOR(pg_catalog.=) 2 AND k.classid OPERATOR(pg_catalog.=) 19526::oid;
COMMENT ON VIEW @extschema@.lease_writers IS
	'one row per backend holding (granted) or waiting for a fence lock: the lease, the epoch of the grant (or floor), the transaction''s start, and for a downstream floor its store';
GRANT SELECT ON @extschema@.lease_writers TO PUBLIC;
