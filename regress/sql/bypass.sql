-- bypass matrix: an application role that does not own the fenced tables
-- tries every path around the fence; each is refused by the fence (LS00x)
-- or by privileges (42501)
\set VERBOSITY sqlstate
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 9000);

CREATE ROLE regress_app; GRANT regress_app TO CURRENT_USER;
CREATE ROLE regress_admin; GRANT regress_admin TO CURRENT_USER;
GRANT EXECUTE ON FUNCTION lease_revoke(text), lease_prune(interval) TO regress_admin;
GRANT CREATE ON SCHEMA public TO regress_app;

-- the owner's setup: fenced table, partitioned fenced table, a child table
-- with a cascading foreign key, all writable (not truncatable) by the app
CREATE TABLE ledger (id int PRIMARY KEY, amount int, epoch bigint);
CREATE TABLE parted (id int, epoch bigint) PARTITION BY RANGE (id);
CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (0) TO (100);
CREATE TABLE parent (id int PRIMARY KEY);
CREATE TABLE child (id int, parent_id int REFERENCES parent ON DELETE CASCADE, epoch bigint);
SELECT lease_fence('ledger', 'app'), lease_fence('parted', 'app'), lease_fence('child', 'app');
-- a partition attached after fencing gets the row fence too
CREATE TABLE parted_high (id int, epoch bigint);
ALTER TABLE parted ATTACH PARTITION parted_high FOR VALUES FROM (100) TO (200);
GRANT SELECT, INSERT, UPDATE, DELETE ON ledger, parted, parted_low, parted_high, parent, child TO regress_app;
GRANT TRUNCATE ON parted_low TO regress_app;
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('app', 'leader', '1h');
SELECT lease_revoke('app');
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('app', 'leader', '1h');
-- 9001 is now stale, 9002 current
INSERT INTO parent VALUES (1), (2);
INSERT INTO ledger VALUES (1, 10, :tl1 + 9002);
INSERT INTO child VALUES (1, 1, :tl1 + 9002);

SET ROLE regress_app;
-- 1. switching triggers off: not without ownership or superuser
SET session_replication_role = replica;
ALTER TABLE ledger DISABLE TRIGGER pg_lease_fence;
ALTER TABLE ledger DISABLE TRIGGER ALL;
DROP TRIGGER pg_lease_fence ON ledger;
SELECT lease_unfence('ledger');
-- 2. TRUNCATE: no privilege on the table; on a partition it has, the fence
TRUNCATE ledger;
TRUNCATE parted_low;
BEGIN;
SELECT lease_use('app', :tl1 + 9001);
TRUNCATE parted_low;
ROLLBACK;
-- 3. COPY FROM fires the row fence
COPY ledger FROM stdin;
2	20	\N
\.
COPY ledger FROM stdin;
2	20	140737488364329
\.
-- 4. INSERT ... ON CONFLICT DO UPDATE, both paths
INSERT INTO ledger VALUES (1, 99, :tl1 + 9001) ON CONFLICT (id) DO UPDATE SET amount = 99;
INSERT INTO ledger VALUES (1, 99, :tl1 + 9002) ON CONFLICT (id) DO UPDATE SET amount = 99;
-- 5. MERGE: merge_fence.sql (MERGE is PostgreSQL 15 and later)
-- 6. writable CTEs
WITH w AS (UPDATE ledger SET amount = 0 RETURNING id) SELECT count(*) FROM w;
WITH w AS (DELETE FROM ledger RETURNING id) SELECT count(*) FROM w;
WITH w AS (INSERT INTO ledger VALUES (4, 1, :tl1 + 9001) RETURNING id) SELECT count(*) FROM w;
-- 7. partitions: direct writes, a row moving between partitions, a later-attached partition
INSERT INTO parted_low VALUES (1, NULL);
INSERT INTO parted_high VALUES (150, NULL);
INSERT INTO parted VALUES (1, :tl1 + 9002), (150, :tl1 + 9002);
UPDATE parted SET id = 160 WHERE id = 1;
UPDATE parted SET id = 60 WHERE id = 150;
UPDATE parted SET id = 60, epoch = :tl1 + 9001 WHERE id = 150;
DELETE FROM parted_high;
-- 8. a cascaded delete from an unfenced table reaches the fenced child
DELETE FROM parent WHERE id = 1;
-- 9. a rule or a trigger on a table the app owns that writes into the fenced table
CREATE TABLE app_inbox (amount int);
CREATE RULE forward AS ON INSERT TO app_inbox DO ALSO INSERT INTO ledger VALUES (5, NEW.amount, NULL);
INSERT INTO app_inbox VALUES (1);
CREATE FUNCTION forward_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO ledger VALUES (6, NEW.amount, NULL); RETURN NEW; END $$;
CREATE TRIGGER forward_trigger AFTER INSERT ON app_inbox FOR EACH ROW EXECUTE FUNCTION forward_trigger();
DROP RULE forward ON app_inbox;
INSERT INTO app_inbox VALUES (1);
-- and a rule on the fenced table itself needs ownership
CREATE RULE skip AS ON INSERT TO ledger DO INSTEAD NOTHING;
-- 10. the lease machinery itself
UPDATE leases SET epoch = :tl1 + 9001 WHERE name = 'app';
DELETE FROM lease_events;
SELECT lease_revoke('app');
SELECT * FROM lease_prune('0s');
SELECT lease_fence_trigger();
-- 11. a grant in the app's name cannot be renewed or released by the holder name alone
SELECT lease_renew('app', 'leader', :tl1 + 9002);
SELECT lease_release('app', 'leader', :tl1 + 9002);
-- 12. a stale token in the session setting, and none at all
SET pg_lease.epoch = '140737488364329';
UPDATE ledger SET amount = 1;
RESET pg_lease.epoch;
UPDATE ledger SET amount = 1;
-- the current token works, so the matrix is not refusing everything
BEGIN;
SELECT lease_use('app', :tl1 + 9002);
UPDATE ledger SET amount = 11 WHERE id = 1;
COMMIT;
RESET ROLE;

-- nothing but the current leader's writes landed
SELECT id, amount, epoch - :tl1 AS epoch FROM ledger ORDER BY id;
SELECT tableoid::regclass AS part, id, epoch - :tl1 AS epoch FROM parted ORDER BY id;
SELECT id, parent_id FROM child ORDER BY id;
SELECT count(*) AS parents FROM parent;
SELECT count(*) AS events_intact FROM lease_events WHERE name = 'app';
SELECT holder, epoch - :tl1 AS epoch FROM leases WHERE name = 'app';
-- the fence covers every partition, the later-attached one included
SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname LIKE 'pg_lease_fence%' AND c.relname LIKE 'parted%' ORDER BY 1, 2;

-- search_path hijack of the administrator functions, called by an administrator
CREATE SCHEMA regress_evil AUTHORIZATION regress_app;
SET ROLE regress_app;
CREATE FUNCTION regress_evil.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT 'infinity'::timestamptz $$;
CREATE FUNCTION regress_evil.texteq(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR regress_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = regress_evil.texteq);
RESET ROLE;
SELECT acquired FROM lease_acquire('keep-me', 'x', '1h');
SET ROLE regress_admin;
SET search_path = regress_evil, pg_catalog, public;
-- a forged clock would make prune delete held leases, forged equality would revoke others
SELECT pruned_leases IS NOT NULL AS ran FROM public.lease_prune('0s');
SELECT public.lease_revoke('no-such-lease');
RESET search_path;
RESET ROLE;
SELECT name, holder FROM leases WHERE name IN ('keep-me', 'app') ORDER BY name;

DROP SCHEMA regress_evil CASCADE;
DROP TABLE ledger, parted, parent, child, app_inbox CASCADE;
DROP FUNCTION forward_trigger();
REVOKE CREATE ON SCHEMA public FROM regress_app;
DROP OWNED BY regress_app, regress_admin;
DROP ROLE regress_app, regress_admin;
