-- downstream fences (1.4): a table fenced by the floor of another database's lease
\set VERBOSITY default
SELECT lease_store_id() ~ '^[0-9]+/' AS store_id_is_sysid_and_database,
       lease_store_id() = (SELECT system_identifier::text FROM pg_control_system()) || '/' || current_database()
         AS store_id_default;
-- the setting overrides it (a database restored into another cluster keeps its identity)
BEGIN;
SET LOCAL pg_lease.store_id = 'orders-db';
SELECT lease_store_id();
ROLLBACK;

CREATE TABLE ds_jobs (id int PRIMARY KEY, note text, epoch bigint);
SELECT lease_fence('ds_jobs', 'sched', store => 'store "A"/db''s');
SELECT tgname, tgnargs FROM pg_trigger WHERE tgrelid = 'ds_jobs'::regclass ORDER BY tgname;

\set VERBOSITY sqlstate
-- no floor yet: the first token raises it, in the write's transaction
INSERT INTO ds_jobs VALUES (1, 'first', 100);
SELECT store, name, epoch FROM lease_floors;
-- the floor itself passes; below it is refused (LS001); no token is LS003
INSERT INTO ds_jobs VALUES (2, 'at the floor', 100);
INSERT INTO ds_jobs VALUES (3, 'below', 99);
INSERT INTO ds_jobs VALUES (3, 'none', NULL);
-- declared with lease_use, stamped into the row
BEGIN;
SELECT lease_use('sched', 100);
INSERT INTO ds_jobs (id, note) VALUES (3, 'declared');
UPDATE ds_jobs SET note = note || '!' WHERE id = 1;
COMMIT;
-- declared with pg_lease.epoch (what run_fenced sends)
BEGIN;
SET LOCAL pg_lease.epoch = 100;
DELETE FROM ds_jobs WHERE id = 2;
COMMIT;
-- an UPDATE that leaves the epoch column alone carries no token
UPDATE ds_jobs SET note = 'stale?' WHERE id = 1;
-- an UPDATE that sets it carries that token
UPDATE ds_jobs SET note = 'by column', epoch = 100 WHERE id = 1;
UPDATE ds_jobs SET note = 'old column', epoch = 99 WHERE id = 1;
SELECT id, note, epoch FROM ds_jobs ORDER BY id;

-- a higher token raises the floor; the old one is refused from then on
BEGIN;
SET LOCAL pg_lease.epoch = 250;
INSERT INTO ds_jobs (id, note) VALUES (4, 'new leader');
SELECT epoch FROM lease_floors;
COMMIT;
INSERT INTO ds_jobs VALUES (5, 'old leader', 100);
-- a raise rolled back with its transaction leaves the floor where it was
BEGIN;
INSERT INTO ds_jobs VALUES (5, 'rolled back', 300);
ROLLBACK;
SELECT epoch FROM lease_floors;
-- and with its savepoint
BEGIN;
SAVEPOINT s;
INSERT INTO ds_jobs VALUES (5, 'savepoint', 300);
ROLLBACK TO SAVEPOINT s;
SELECT epoch FROM lease_floors;
INSERT INTO ds_jobs VALUES (5, 'after the savepoint', 250);
COMMIT;

-- a list in pg_lease.epoch: only the epoch that is the floor is used;
-- a list without it is refused (stale when all below, else no usable token)
BEGIN;
SET LOCAL pg_lease.epoch = '7, 250, 900';
INSERT INTO ds_jobs (id, note) VALUES (6, 'from a list');
COMMIT;
BEGIN;
SET LOCAL pg_lease.epoch = '7, 900';
INSERT INTO ds_jobs (id, note) VALUES (7, 'ambiguous');
ROLLBACK;
BEGIN;
SET LOCAL pg_lease.epoch = '7, 8';
INSERT INTO ds_jobs (id, note) VALUES (7, 'all below');
ROLLBACK;
SELECT epoch FROM lease_floors;

-- TRUNCATE needs a declared token at least the floor
TRUNCATE ds_jobs;
BEGIN;
SELECT lease_use('sched', 100);
TRUNCATE ds_jobs;
ROLLBACK;

-- lease_raise: true when the floor is now the epoch, false when higher
SELECT lease_raise('store "A"/db''s', 'sched', 400);
SELECT lease_raise('store "A"/db''s', 'sched', 400);
SELECT lease_raise('store "A"/db''s', 'sched', 300);
SELECT epoch FROM lease_floors;
INSERT INTO ds_jobs VALUES (8, 'below the raise', 250);
-- two lease stores that reuse a lease name never share a floor
SELECT lease_raise('store B', 'sched', 5);
SELECT store, name, epoch FROM lease_floors ORDER BY store;
INSERT INTO ds_jobs VALUES (8, 'at the floor', 400);

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
CREATE ROLE regress_ds_writer;
CREATE ROLE regress_ds_raiser;
GRANT EXECUTE ON FUNCTION lease_raise(text, text, bigint) TO regress_ds_raiser;
GRANT INSERT, SELECT ON ds_jobs TO regress_ds_writer;
SELECT has_function_privilege('regress_ds_writer', 'lease_raise(text, text, bigint)', 'EXECUTE') AS writer_may_raise,
       has_function_privilege('regress_ds_raiser', 'lease_raise(text, text, bigint)', 'EXECUTE') AS raiser_may_raise;
SET ROLE regress_ds_writer;
SELECT lease_raise('store "A"/db''s', 'sched', 500);
UPDATE lease_floor_rows SET epoch = 1;
INSERT INTO lease_floor_rows VALUES ('x', 'y', 1, now());
INSERT INTO ds_jobs VALUES (9, 'writer raises', 450);
SELECT epoch FROM lease_floors WHERE store = 'store "A"/db''s';
RESET ROLE;
SET ROLE regress_ds_raiser;
SELECT lease_raise('store "A"/db''s', 'sched', 500);
-- the raiser cannot write the table itself
INSERT INTO ds_jobs VALUES (10, 'raiser writes', 500);
RESET ROLE;
-- a search_path that shadows the floors table changes nothing
CREATE SCHEMA regress_ds_evil;
CREATE TABLE regress_ds_evil.lease_floor_rows (store text, name text, epoch bigint, raised_at timestamptz);
SET search_path = regress_ds_evil, public;
INSERT INTO ds_jobs VALUES (10, 'through the path', 500);
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
INSERT INTO ds_jobs VALUES (11, 'raised with a trigger', 700);
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
