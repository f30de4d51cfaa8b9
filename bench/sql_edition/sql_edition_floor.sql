-- What any PL/pgSQL fence costs at least, beside the SQL edition's (shared
-- by bench/sql_edition/sql_edition_floor_ratios.sh, sql_edition_cpu.sh and
-- sql_edition_callgrind.sh):
--   empty          a trigger that only returns (PL/pgSQL's floor)
--   least          the cheapest correct fence (issue 52): the fence lock
--                  taken by an assignment (PERFORM runs a whole query),
--                  then lease f's row read by one boolean SELECT INTO in a
--                  new statement (its snapshot is taken after the lock),
--                  checked against pg_lease.epoch; nothing stamped. No
--                  SECURITY DEFINER and no SET search_path (leases is
--                  readable by PUBLIC): every name and operator is
--                  schema-qualified instead, which closes the search_path
--                  hijack SET guarded against.
--   least_definer  the same, SECURITY DEFINER: what the edition's trigger
--                  needs, as a downstream fence writes floors as the owner
CREATE TABLE empty (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
CREATE TABLE least (LIKE empty INCLUDING ALL);
CREATE TABLE least_definer (LIKE empty INCLUDING ALL);
CREATE FUNCTION empty_fence() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE FUNCTION least_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	token bigint := pg_catalog.current_setting('pg_lease.epoch')::bigint;
	ok boolean;
BEGIN
	ok := pg_catalog.pg_advisory_xact_lock_shared(19539, public.lease_sql_fence_key(token)) IS NULL;
	SELECT l.epoch OPERATOR(pg_catalog.=) token AND l.holder IS NOT NULL
		   AND pg_catalog.clock_timestamp() OPERATOR(pg_catalog.<) l.expires_at
	  INTO ok FROM public.leases l WHERE l.name OPERATOR(pg_catalog.=) TG_ARGV[0];
	IF ok IS NOT TRUE THEN
		RAISE EXCEPTION 'stale' USING ERRCODE = 'LS001';
	END IF;
	RETURN NEW;
END$$;
DO $$BEGIN
	EXECUTE format('CREATE FUNCTION least_definer_fence() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS %L',
				   (SELECT prosrc FROM pg_proc WHERE proname = 'least_fence'));
END$$;
CREATE TRIGGER f BEFORE INSERT ON empty FOR EACH ROW EXECUTE FUNCTION empty_fence();
CREATE TRIGGER f BEFORE INSERT ON least FOR EACH ROW EXECUTE FUNCTION least_fence('f');
CREATE TRIGGER f BEFORE INSERT ON least_definer FOR EACH ROW EXECUTE FUNCTION least_definer_fence('f');
