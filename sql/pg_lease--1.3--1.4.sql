-- pg_lease 1.3 -> 1.4: downstream fences.
\echo Use "ALTER EXTENSION pg_lease UPDATE TO '1.4'" to load this file. \quit

-- 1.4: floors.  A database that does not hold a lease can still fence its
-- tables by it: it keeps, per (lease store, lease name), the highest epoch
-- it has seen, and refuses writes below it (extension/floors.c).  Written
-- only through lease_raise and the fence trigger, as the table's owner.
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

DROP FUNCTION @extschema@.lease_fence(regclass, text, name);
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

-- Nothing is recorded in lease_upgrades: 1.4 needs no compatibility period
-- (a 1.3 library still loaded in an older session refuses writes to a
-- downstream-fenced table, whose trigger takes three arguments: it fails
-- closed), and CREATE EXTENSION runs this script after pg_lease--1.3.sql.
