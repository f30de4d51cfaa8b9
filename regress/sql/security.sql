-- security: who may write what, role binding, ownership, search_path hijacking
\set VERBOSITY sqlstate
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 7000);

CREATE ROLE regress_alice; GRANT regress_alice TO CURRENT_USER;
CREATE ROLE regress_bob; GRANT regress_bob TO CURRENT_USER;
CREATE ROLE regress_admin; GRANT regress_admin TO CURRENT_USER;
GRANT EXECUTE ON FUNCTION lease_revoke(text) TO regress_admin;

-- every function that writes is SECURITY DEFINER with a pinned search_path;
-- the trigger function runs no name lookup a search_path could redirect
SELECT p.proname, p.prosecdef, p.proconfig
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_lease'
 ORDER BY p.proname;
-- lease_revoke is not executable by PUBLIC
SELECT has_function_privilege('regress_alice', 'lease_revoke(text)', 'EXECUTE') AS alice_may_revoke,
       has_function_privilege('regress_admin', 'lease_revoke(text)', 'EXECUTE') AS admin_may_revoke;

SET ROLE regress_alice;
-- everyone may read
SELECT count(*) >= 0 AS readable FROM leases;
SELECT count(*) >= 0 AS readable FROM lease_status;
SELECT count(*) >= 0 AS readable FROM lease_events;
-- nobody but the functions may write
INSERT INTO leases (name, holder, epoch, acquired_at, renewed_at, expires_at, ttl, owner_role)
  VALUES ('forged', 'x', 1, now(), now(), now() + '1h', '1h', 'regress_alice');
UPDATE leases SET epoch = epoch + 1;
UPDATE leases SET expires_at = 'infinity';
DELETE FROM leases;
TRUNCATE leases;
INSERT INTO lease_events (event, name, holder, epoch, role) VALUES ('acquired', 'x', 'x', 1, 'x');
DELETE FROM lease_events;
SELECT nextval('lease_epoch_seq');
SELECT setval('lease_epoch_seq', 1);
SELECT * FROM leases FOR SHARE;
-- nor revoke
SELECT lease_revoke('anything');
-- alice acquires; the grant records her role
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('sec', 'alice-1', '30s');
RESET ROLE;
SELECT holder, owner_role FROM leases WHERE name = 'sec';

-- bob may not renew, release or extend alice's lease, even knowing its holder and epoch
SET ROLE regress_bob;
SELECT lease_renew('sec', 'alice-1', :tl1 + 7001);
SELECT lease_release('sec', 'alice-1', :tl1 + 7001);
SELECT * FROM lease_acquire('sec', 'alice-1', '30s');
-- a wrong guess is just "not held", and a different holder is refused as usual
SELECT lease_renew('sec', 'alice-1', :tl1 + 7000) IS NULL AS lost;
SELECT acquired, holder FROM lease_acquire('sec', 'bob-1', '30s');
RESET ROLE;
SELECT holder, epoch - :tl1 AS epoch, owner_role FROM leases WHERE name = 'sec';
-- alice may; so may a superuser, and the grant stays alice's
SET ROLE regress_alice;
SELECT lease_renew('sec', 'alice-1', :tl1 + 7001) IS NOT NULL AS renewed;
RESET ROLE;
SELECT lease_renew('sec', 'alice-1', :tl1 + 7001) IS NOT NULL AS superuser_renewed;
SELECT owner_role FROM leases WHERE name = 'sec';
-- an administrator that was granted lease_revoke may revoke it
SET ROLE regress_admin;
SELECT lease_revoke('sec');
RESET ROLE;
-- once free, bob may take it, and then it is his
SET ROLE regress_bob;
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('sec', 'bob-1', '30s');
RESET ROLE;
SELECT owner_role FROM leases WHERE name = 'sec';

-- fencing: only the table's owner may fence or unfence it
CREATE TABLE alice_jobs (id int, epoch bigint);
GRANT CREATE ON SCHEMA public TO regress_alice; -- an owner (not a superuser) may then give it the table
ALTER TABLE alice_jobs OWNER TO regress_alice;
GRANT SELECT, INSERT, UPDATE, DELETE ON alice_jobs TO regress_bob;
SET ROLE regress_bob;
SELECT lease_fence('alice_jobs', 'sec');
RESET ROLE;
SET ROLE regress_alice;
SELECT lease_fence('alice_jobs', 'sec');
RESET ROLE;
SET ROLE regress_bob;
SELECT lease_unfence('alice_jobs');
-- bob does not own the table and may not lock lease rows, yet the fence checks his writes
INSERT INTO alice_jobs VALUES (1, NULL);
INSERT INTO alice_jobs VALUES (1, :tl1 + 7001);
INSERT INTO alice_jobs VALUES (1, :tl1 + 7002);
BEGIN;
SELECT lease_use('sec', :tl1 + 7002);
UPDATE alice_jobs SET id = 2;
COMMIT;
-- nor can he switch the trigger off
ALTER TABLE alice_jobs DISABLE TRIGGER pg_lease_fence;
SET session_replication_role = replica;
DROP TRIGGER pg_lease_fence ON alice_jobs;
RESET ROLE;
SELECT id, epoch - :tl1 AS epoch FROM alice_jobs;

-- search_path hijacking: bob's schema shadows clock_timestamp(), now(), text
-- equality and the leases table; none of it reaches the functions or the trigger
CREATE SCHEMA regress_evil AUTHORIZATION regress_bob;
SET ROLE regress_bob;
CREATE FUNCTION regress_evil.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT '2000-01-01'::timestamptz $$;
CREATE FUNCTION regress_evil.now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT '2000-01-01'::timestamptz $$;
CREATE FUNCTION regress_evil.texteq(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR regress_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = regress_evil.texteq);
CREATE TABLE regress_evil.leases (name text, holder text, epoch bigint, expires_at timestamptz);
CREATE TEMP TABLE leases (name text, holder text, epoch bigint, expires_at timestamptz);
SET search_path = regress_evil, pg_catalog, public;
SELECT 'a'::text = 'b'::text AS hijacked_equality, clock_timestamp() < '2001-01-01' AS hijacked_clock;
-- alice's lease is not taken because of a forged clock or equality
SELECT acquired, holder FROM public.lease_acquire('sec', 'bob-2', '30s');
SELECT public.lease_renew('sec', 'bob-2', 140737488362330) IS NULL AS lost;
SELECT public.lease_release('sec', 'bob-2', 140737488362330) AS released;
-- the fence still refuses a stale token and accepts the current one
INSERT INTO public.alice_jobs VALUES (3, 140737488362329);
INSERT INTO public.alice_jobs VALUES (3, 140737488362330);
SET search_path = pg_temp, regress_evil, public;
INSERT INTO public.alice_jobs VALUES (4, 140737488362329);
-- bigint equality, timestamptz order and a type named jsonb shadowed too:
-- what a trigger that pins no search_path (the SQL edition's, for speed)
-- would look up unqualified; stale and expired tokens are still refused,
-- by the row, pg_lease.epoch and lease_use, and the current one stamped
CREATE FUNCTION regress_evil.int8eq(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR regress_evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = regress_evil.int8eq);
CREATE FUNCTION regress_evil.tstzlt(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR regress_evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = regress_evil.tstzlt);
CREATE TEMP TABLE jsonb (x int);
CREATE TABLE regress_evil.bob_jobs (id int, epoch bigint);
SELECT public.lease_fence('regress_evil.bob_jobs', 'sec_short');
SELECT epoch AS short_epoch FROM public.lease_acquire('sec_short', 'bob-3', '10 ms') \gset
SET search_path = regress_evil, pg_catalog, public;
SELECT 7::bigint = 8::bigint AS hijacked_bigint_equality, now() < '2000-01-01'::timestamptz AS hijacked_order;
INSERT INTO public.alice_jobs VALUES (5, 140737488362329);
BEGIN;
SET LOCAL pg_lease.epoch = '140737488362329';
INSERT INTO public.alice_jobs (id) VALUES (5);
ROLLBACK;
BEGIN;
SELECT public.lease_use('sec', 140737488362329);
INSERT INTO public.alice_jobs (id) VALUES (5);
ROLLBACK;
SELECT pg_catalog.pg_sleep(0.1);
INSERT INTO regress_evil.bob_jobs VALUES (1, :short_epoch);
BEGIN;
SET LOCAL pg_lease.epoch = :'short_epoch';
INSERT INTO regress_evil.bob_jobs (id) VALUES (1);
ROLLBACK;
BEGIN;
SET LOCAL pg_lease.epoch = '140737488362330';
INSERT INTO public.alice_jobs (id, epoch) VALUES (6, 1);
COMMIT;
RESET search_path;
RESET ROLE;
DROP TABLE pg_temp.leases, pg_temp.jsonb;
SELECT name, holder, epoch - :tl1 AS epoch FROM leases WHERE name = 'sec';
SELECT id, epoch - :tl1 AS epoch FROM alice_jobs ORDER BY id;

DROP SCHEMA regress_evil CASCADE;
DROP TABLE alice_jobs;
DROP OWNED BY regress_alice, regress_bob, regress_admin;
DROP ROLE regress_alice, regress_bob, regress_admin;
