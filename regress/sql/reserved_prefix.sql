-- Unknown settings under pg_lease's prefix are refused from PostgreSQL 15
-- on (an extension's prefix is reserved when its library loads); before
-- 15 any custom setting is taken as a placeholder. The SQL edition has no
-- library, so nothing reserves the prefix there on any major (a library's
-- settings are in pg_settings; placeholders are not). One expected output
-- for every major and both editions: each line says whether the server did
-- what its major promises.
\set VERBOSITY sqlstate
SELECT lease_store_id() IS NOT NULL AS loaded;
CREATE FUNCTION pg_temp.refused(setting text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config(setting, '1', false);
    RETURN false;
EXCEPTION WHEN invalid_name THEN
    RETURN true;
END $$;
SELECT pg_temp.refused('pg_lease.no_such_setting')
       = (current_setting('server_version_num')::int >= 150000
          AND EXISTS (SELECT FROM pg_settings WHERE name = 'pg_lease.max_ttl')) AS as_its_major_promises;
-- a setting of another prefix is a placeholder everywhere
SELECT pg_temp.refused('some_app.setting') AS refused;
-- pg_lease's own settings work the same on every major
SET pg_lease.max_ttl = '1h';
SHOW pg_lease.max_ttl;
RESET pg_lease.max_ttl;
