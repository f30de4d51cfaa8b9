-- What any PL/pgSQL fence costs at least, beside the SQL edition's (shared
-- by bench/sql_edition/sql_edition_cpu.sh and bench/sql_edition/sql_edition_callgrind.sh): table
-- empty, whose trigger is SECURITY DEFINER with SET search_path and only
-- returns (PL/pgSQL's floor), and table least, whose trigger does the least
-- a correct fence does: the fence lock, then lease f's row in a new
-- statement, checked against pg_lease.epoch (no stamping).
CREATE TABLE empty (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
CREATE TABLE least (LIKE empty INCLUDING ALL);
CREATE FUNCTION empty_fence() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp AS $$BEGIN RETURN NEW; END$$;
CREATE FUNCTION least_fence() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	token bigint := current_setting('pg_lease.epoch')::bigint;
	r record;
BEGIN
	PERFORM pg_advisory_xact_lock_shared(19539, (token & 2147483647)::integer);
	SELECT l.epoch, l.holder, l.expires_at INTO r FROM public.leases l WHERE l.name = TG_ARGV[0];
	IF r.epoch IS DISTINCT FROM token OR r.holder IS NULL OR r.expires_at <= clock_timestamp() THEN
		RAISE EXCEPTION 'stale' USING ERRCODE = 'LS001';
	END IF;
	RETURN NEW;
END$$;
CREATE TRIGGER f BEFORE INSERT ON empty FOR EACH ROW EXECUTE FUNCTION empty_fence();
CREATE TRIGGER f BEFORE INSERT ON least FOR EACH ROW EXECUTE FUNCTION least_fence('f');
