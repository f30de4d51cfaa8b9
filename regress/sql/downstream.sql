-- downstream fences (1.4): a table fenced by the floor of another database's lease
\set VERBOSITY default
SELECT lease_store_id() ~ '^[0-9]+/' AS store_id_is_sysid_and_database,
       lease_store_id() = (SELECT system_identifier::text FROM pg_control_system()) || '/' || current_database()
         AS store_id_default;
-- the setting overrides it (a database restored into another cluster keeps its identity)
BEGIN;
SET LOCAL pg_lease.store_id = 'orders-db';
SELECT lease_store_id() = 'orders-db' AS from_setting;
ROLLBACK;

CREATE TABLE ds_jobs (id int PRIMARY KEY, note text, epoch bigint);
SELECT lease_fence('ds_jobs', 'sched', store => 'store "A"/db''s');
SELECT tgname, tgnargs FROM pg_trigger WHERE tgrelid = 'ds_jobs'::regclass ORDER BY tgname;

\set VERBOSITY sqlstate
-- 1.5: only a token named for the lease (lease_use) moves a floor.  No
-- floor yet: an unnamed token (the epoch column, pg_lease.epoch) is not
-- known to be this lease's, so it is refused (LS003) and raises nothing
INSERT INTO ds_jobs VALUES (1, 'first', 100);
BEGIN;
SET LOCAL pg_lease.epoch = 100;
INSERT INTO ds_jobs (id, note) VALUES (1, 'first');
ROLLBACK;
SELECT count(*) AS floors FROM lease_floors;
-- a named token raises it, in the write's transaction, and is stamped
BEGIN;
SELECT lease_use('sched', 100);
INSERT INTO ds_jobs (id, note) VALUES (1, 'first');
SELECT store, name, epoch FROM lease_floors;
COMMIT;
-- unnamed tokens pass only at the floor: below it LS001, above it LS003
INSERT INTO ds_jobs VALUES (2, 'at the floor', 100);
\set VERBOSITY default
INSERT INTO ds_jobs VALUES (3, 'below', 99);
\set VERBOSITY sqlstate
INSERT INTO ds_jobs VALUES (3, 'above', 101);
INSERT INTO ds_jobs VALUES (3, 'huge', 9223372036854775807);
INSERT INTO ds_jobs VALUES (3, 'negative', -5);
INSERT INTO ds_jobs VALUES (3, 'none', NULL);
SELECT epoch FROM lease_floors;
-- declared with lease_use at the floor, stamped into the row
BEGIN;
SELECT lease_use('sched', 100);
INSERT INTO ds_jobs (id, note) VALUES (3, 'declared');
UPDATE ds_jobs SET note = note || '!' WHERE id = 1;
COMMIT;
-- declared with pg_lease.epoch (what run_fenced sends) at the floor
BEGIN;
SET LOCAL pg_lease.epoch = 100;
DELETE FROM ds_jobs WHERE id = 2;
COMMIT;
-- an UPDATE that leaves the epoch column alone carries no token
UPDATE ds_jobs SET note = 'stale?' WHERE id = 1;
-- an UPDATE that sets it carries that token: the floor passes, others not
UPDATE ds_jobs SET note = 'by column', epoch = 100 WHERE id = 1;
UPDATE ds_jobs SET note = 'old column', epoch = 99 WHERE id = 1;
UPDATE ds_jobs SET note = 'new column', epoch = 101 WHERE id = 1;
SELECT id, note, epoch FROM ds_jobs ORDER BY id;

-- a named token above the floor raises it; the old one is refused from then on
BEGIN;
SELECT lease_use('sched', 250);
INSERT INTO ds_jobs (id, note) VALUES (4, 'new leader');
SELECT epoch FROM lease_floors;
COMMIT;
INSERT INTO ds_jobs VALUES (5, 'old leader', 100);
BEGIN;
SELECT lease_use('sched', 100);
INSERT INTO ds_jobs (id, note) VALUES (5, 'old leader, named');
ROLLBACK;
-- after the raise the unnamed token of the new leader passes
INSERT INTO ds_jobs VALUES (5, 'new leader, unnamed', 250);
-- a raise rolled back with its transaction leaves the floor where it was
BEGIN;
SELECT lease_use('sched', 300);
INSERT INTO ds_jobs (id, note) VALUES (6, 'rolled back');
ROLLBACK;
SELECT epoch FROM lease_floors;
-- and with its savepoint
BEGIN;
SAVEPOINT s;
SELECT lease_use('sched', 300);
INSERT INTO ds_jobs (id, note) VALUES (6, 'savepoint');
ROLLBACK TO SAVEPOINT s;
SELECT epoch FROM lease_floors;
INSERT INTO ds_jobs VALUES (6, 'after the savepoint', 250);
COMMIT;

-- a list in pg_lease.epoch: only the epoch that is the floor is used; a
-- list without it is refused (stale when all below, else LS003) and
-- raises nothing
BEGIN;
SET LOCAL pg_lease.epoch = '7, 250, 900';
INSERT INTO ds_jobs (id, note) VALUES (7, 'from a list');
COMMIT;
SELECT epoch FROM ds_jobs WHERE id = 7;
BEGIN;
SET LOCAL pg_lease.epoch = '7, 900';
INSERT INTO ds_jobs (id, note) VALUES (8, 'ambiguous');
ROLLBACK;
BEGIN;
SET LOCAL pg_lease.epoch = '7, 8';
INSERT INTO ds_jobs (id, note) VALUES (8, 'all below');
ROLLBACK;
BEGIN;
SET LOCAL pg_lease.epoch = 900;
\set VERBOSITY default
INSERT INTO ds_jobs (id, note) VALUES (8, 'one above');
\set VERBOSITY sqlstate
ROLLBACK;
SELECT epoch FROM lease_floors;

-- TRUNCATE needs a token: a stale named one is refused, the floor passes
TRUNCATE ds_jobs;
BEGIN;
SELECT lease_use('sched', 100);
TRUNCATE ds_jobs;
ROLLBACK;
BEGIN;
SET LOCAL pg_lease.epoch = 250;
TRUNCATE ds_jobs;
ROLLBACK;

-- lease_raise: true when the floor is now the epoch, false when higher
SELECT lease_raise('store "A"/db''s', 'sched', 400);
SELECT lease_raise('store "A"/db''s', 'sched', 400);
SELECT lease_raise('store "A"/db''s', 'sched', 300);
SELECT epoch FROM lease_floors;
INSERT INTO ds_jobs VALUES (9, 'below the raise', 250);
-- two lease stores that reuse a lease name never share a floor
SELECT lease_raise('store B', 'sched', 5);
SELECT store, name, epoch FROM lease_floors ORDER BY store;
INSERT INTO ds_jobs VALUES (9, 'at the floor', 400);

-- bad input: 22004, 22023, nothing written
SELECT lease_raise(NULL, 'sched', 1);
SELECT lease_raise('store B', NULL, 1);
SELECT lease_raise('store B', 'sched', NULL);
SELECT lease_raise('store B', 'sched', 0);
SELECT lease_raise('store B', 'sched', -5);
SELECT lease_raise('', 'sched', 1);
SELECT lease_raise(repeat('s', 256), 'sched', 1);
SELECT lease_raise('store B', '', 1);
SELECT lease_raise(lease_store_id(), 'sched', 1);
SELECT lease_fence('ds_jobs', 'sched', store => '');
SELECT lease_fence('ds_jobs', 'sched', store => repeat('s', 256));
SELECT lease_fence('ds_jobs', 'sched', store => lease_store_id());
SELECT count(*) AS floors FROM lease_floors;

-- who may raise: not PUBLIC; a writer of the fenced table raises through
-- its writes, as the table's writer, without rights on the floors
CREATE ROLE regress_ds_writer; GRANT regress_ds_writer TO CURRENT_USER;
CREATE ROLE regress_ds_raiser; GRANT regress_ds_raiser TO CURRENT_USER;
GRANT EXECUTE ON FUNCTION lease_raise(text, text, bigint) TO regress_ds_raiser;
GRANT INSERT, SELECT ON ds_jobs TO regress_ds_writer;
SELECT has_function_privilege('regress_ds_writer', 'lease_raise(text, text, bigint)', 'EXECUTE') AS writer_may_raise,
       has_function_privilege('regress_ds_raiser', 'lease_raise(text, text, bigint)', 'EXECUTE') AS raiser_may_raise;
SET ROLE regress_ds_writer;
SELECT lease_raise('store "A"/db''s', 'sched', 500);
UPDATE lease_floor_rows SET epoch = 1;
INSERT INTO lease_floor_rows VALUES ('x', 'y', 1, now());
INSERT INTO ds_jobs VALUES (10, 'writer, unnamed', 450);
BEGIN;
SELECT lease_use('sched', 450);
INSERT INTO ds_jobs (id, note) VALUES (10, 'writer raises');
COMMIT;
SELECT epoch FROM lease_floors WHERE store = 'store "A"/db''s';
RESET ROLE;
SET ROLE regress_ds_raiser;
SELECT lease_raise('store "A"/db''s', 'sched', 500);
-- the raiser cannot write the table itself
INSERT INTO ds_jobs VALUES (11, 'raiser writes', 500);
RESET ROLE;
-- a search_path that shadows the floors table changes nothing
CREATE SCHEMA regress_ds_evil;
CREATE TABLE regress_ds_evil.lease_floor_rows (store text, name text, epoch bigint, raised_at timestamptz);
SET search_path = regress_ds_evil, public;
BEGIN;
SELECT lease_use('sched', 500);
INSERT INTO ds_jobs (id, note) VALUES (11, 'through the path');
COMMIT;
SELECT lease_raise('store "A"/db''s', 'sched', 600);
RESET search_path;
SELECT count(*) AS shadow_rows FROM regress_ds_evil.lease_floor_rows;
SELECT epoch FROM lease_floors WHERE store = 'store "A"/db''s';

-- triggers on the floors fire as on any table (here: an audit of raises at
-- COMMIT), for lease_raise and for a raise through a write
CREATE TABLE ds_raise_log (name text, epoch bigint);
CREATE FUNCTION ds_log_raise() RETURNS trigger LANGUAGE plpgsql
	AS $$ BEGIN INSERT INTO public.ds_raise_log VALUES (NEW.name, NEW.epoch); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER ds_log AFTER INSERT OR UPDATE ON lease_floor_rows
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ds_log_raise();
SELECT lease_raise('store C', 'audit', 3);
BEGIN;
SELECT lease_use('sched', 700);
INSERT INTO ds_jobs (id, note) VALUES (12, 'raised with a trigger');
COMMIT;
SELECT name, epoch FROM ds_raise_log ORDER BY epoch;
DROP TRIGGER ds_log ON lease_floor_rows;
DROP TABLE ds_raise_log;
DROP FUNCTION ds_log_raise();

-- a local lease of the same name is apart from the floor
SELECT epoch AS local_epoch FROM lease_acquire('sched', 'me', '1h') \gset
CREATE TABLE local_jobs (id int, epoch bigint);
SELECT lease_fence('local_jobs', 'sched');
INSERT INTO local_jobs VALUES (1, :local_epoch);
INSERT INTO local_jobs VALUES (2, 600);
SELECT lease_release('sched', 'me', :local_epoch);
SELECT epoch FROM lease_floors WHERE store = 'store "A"/db''s';
DROP TABLE local_jobs;

-- unfence removes the downstream fence's triggers too
SELECT lease_unfence('ds_jobs');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'ds_jobs'::regclass;
SELECT id, note, epoch FROM ds_jobs ORDER BY id;

DROP SCHEMA regress_ds_evil CASCADE;
DROP TABLE ds_jobs;
REVOKE EXECUTE ON FUNCTION lease_raise(text, text, bigint) FROM regress_ds_raiser;
DROP ROLE regress_ds_writer;
DROP ROLE regress_ds_raiser;
