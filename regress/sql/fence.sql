-- the fence trigger: token sources, checks, stamping, DELETE, TRUNCATE
\set VERBOSITY sqlstate
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 4000);

CREATE TABLE jobs (id int PRIMARY KEY, state text, epoch bigint);
CREATE TABLE other_col (id int, token bigint);
SELECT lease_fence('jobs', 'sched');
SELECT lease_fence('other_col', 'sched', 'token');
-- fencing is idempotent: one row trigger and one TRUNCATE trigger
SELECT lease_fence('jobs', 'sched');
SELECT tgname, tgtype FROM pg_trigger WHERE tgrelid = 'jobs'::regclass ORDER BY tgname;

-- no lease yet: a write with a token is refused, the lease is not held
INSERT INTO jobs VALUES (1, 'new', :tl1 + 4001);
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('sched', 'leader-1', '30s');

-- 3. no token at all
INSERT INTO jobs VALUES (1, 'new', NULL);
INSERT INTO jobs (id, state) VALUES (1, 'new');

-- 2. INSERT carries the row's epoch column
INSERT INTO jobs VALUES (1, 'new', :tl1 + 4001);
INSERT INTO jobs VALUES (2, 'new', :tl1 + 4000);
INSERT INTO jobs VALUES (2, 'new', :tl1 + 4002);
INSERT INTO other_col VALUES (1, :tl1 + 4001);
SELECT id, state, epoch - :tl1 AS epoch FROM jobs ORDER BY id;

-- UPDATE that leaves the epoch column alone has no token, even though the
-- row holds the current epoch (a stale writer must not borrow it)
UPDATE jobs SET state = 'borrowed' WHERE id = 1;
-- UPDATE that sets the column carries it
UPDATE jobs SET state = 'running', epoch = :tl1 + 4001 WHERE id = 1;
UPDATE jobs SET state = 'stale', epoch = :tl1 + 4000 WHERE id = 1;
-- DELETE has no row token
DELETE FROM jobs WHERE id = 1;
SELECT id, state, epoch - :tl1 AS epoch FROM jobs ORDER BY id;

-- 1a. lease_use: declared for the transaction, stamps INSERT and UPDATE
BEGIN;
SELECT lease_use('sched', :tl1 + 4001);
INSERT INTO jobs VALUES (2, 'stamped', NULL);
INSERT INTO jobs VALUES (3, 'stamped over', 42);
UPDATE jobs SET state = 'updated' WHERE id = 1;
DELETE FROM jobs WHERE id = 3;
COMMIT;
SELECT id, state, epoch - :tl1 AS epoch FROM jobs ORDER BY id;
-- the declaration ends with the transaction
INSERT INTO jobs VALUES (4, 'new', NULL);
-- a declared stale token is refused even if the row carries the current one
BEGIN;
SELECT lease_use('sched', :tl1 + 4000);
INSERT INTO jobs VALUES (4, 'new', :tl1 + 4001);
ROLLBACK;
-- the newest declaration wins
BEGIN;
SELECT lease_use('sched', :tl1 + 4000);
SELECT lease_use('sched', :tl1 + 4001);
INSERT INTO jobs VALUES (4, 'new', NULL);
ROLLBACK;
-- a declaration made in a rolled-back subtransaction is gone
BEGIN;
SAVEPOINT s;
SELECT lease_use('sched', :tl1 + 4001);
ROLLBACK TO s;
INSERT INTO jobs VALUES (4, 'new', NULL);
ROLLBACK;
-- one made in a released subtransaction stays
BEGIN;
SAVEPOINT s;
SELECT lease_use('sched', :tl1 + 4001);
RELEASE s;
INSERT INTO jobs VALUES (4, 'new', NULL);
ROLLBACK;
-- a declaration for another lease does not count
BEGIN;
SELECT lease_use('other-lease', :tl1 + 4001);
INSERT INTO jobs VALUES (4, 'new', NULL);
ROLLBACK;
-- outside a transaction block lease_use warns: it would end with its statement
SELECT lease_use('sched', :tl1 + 4001);

-- 1b. pg_lease.epoch: session and SET LOCAL, any list containing the current epoch
SET pg_lease.epoch = '4001';
INSERT INTO jobs VALUES (4, 'setting', NULL);
SET pg_lease.epoch = '140737488359329';
INSERT INTO jobs VALUES (4, 'setting', NULL);
SET pg_lease.epoch = '17, 140737488359329 ,99';
INSERT INTO jobs VALUES (5, 'setting list', 7);
UPDATE jobs SET state = 'setting update' WHERE id = 5;
-- a larger epoch listed first (another lease's token) does not hide the current one
SET pg_lease.epoch = '140737488359999, 140737488359329';
UPDATE jobs SET state = 'setting update' WHERE id = 5;
RESET pg_lease.epoch;
BEGIN;
SET LOCAL pg_lease.epoch = '140737488359329';
INSERT INTO jobs VALUES (6, 'set local', NULL);
COMMIT;
INSERT INTO jobs VALUES (7, 'after set local', NULL);
-- lease_use beats pg_lease.epoch
BEGIN;
SET LOCAL pg_lease.epoch = '140737488359329';
SELECT lease_use('sched', :tl1 + 4000);
INSERT INTO jobs VALUES (7, 'new', NULL);
ROLLBACK;
SELECT id, state, epoch - :tl1 AS epoch FROM jobs ORDER BY id;

-- TRUNCATE needs the current token declared in the transaction
TRUNCATE other_col;
BEGIN;
SELECT lease_use('sched', :tl1 + 4000);
TRUNCATE other_col;
ROLLBACK;
BEGIN;
SELECT lease_use('sched', :tl1 + 4001);
TRUNCATE other_col;
COMMIT;
SELECT count(*) FROM other_col;

-- a new leader: every write of the old one is refused as stale (LS001)
SELECT lease_revoke('sched');
-- released or revoked: the latest epoch is refused, lease not held (LS002)
INSERT INTO jobs VALUES (8, 'after revoke', :tl1 + 4001);
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('sched', 'leader-2', '30s');
INSERT INTO jobs VALUES (8, 'old leader', :tl1 + 4001);
UPDATE jobs SET state = 'old leader', epoch = :tl1 + 4001 WHERE id = 2;
BEGIN;
SELECT lease_use('sched', :tl1 + 4001);
DELETE FROM jobs WHERE id = 2;
ROLLBACK;
-- a token from the future was never granted
INSERT INTO jobs VALUES (8, 'future', :tl1 + 4999);
INSERT INTO jobs VALUES (8, 'new leader', :tl1 + 4002);
-- expired: LS002
SELECT lease_renew('sched', 'leader-2', :tl1 + 4002, '100ms') IS NOT NULL AS renewed;
SELECT pg_sleep(0.3);
INSERT INTO jobs VALUES (9, 'expired', :tl1 + 4002);
-- a lease that does not exist
SELECT lease_fence('other_col', 'never-granted', 'token');
INSERT INTO other_col VALUES (1, 5);
SELECT id, state, epoch - :tl1 AS epoch FROM jobs ORDER BY id;

-- rows of a multi-row statement are each checked and stamped
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('sched', 'leader-3', '30s');
BEGIN;
SELECT lease_use('sched', :tl1 + 4003);
INSERT INTO jobs SELECT g, 'bulk', NULL FROM generate_series(100, 1099) g;
UPDATE jobs SET state = 'bulk updated' WHERE id >= 100;
COMMIT;
SELECT count(*), min(epoch) - :tl1 AS min_epoch, max(epoch) - :tl1 AS max_epoch FROM jobs WHERE id >= 100;
-- a write that passed holds the lease row: a lease function in the same
-- transaction sees and changes it, and the next write is checked anew
BEGIN;
SELECT lease_use('sched', :tl1 + 4003);
INSERT INTO jobs VALUES (10, 'before release', NULL);
SELECT lease_release('sched', 'leader-3', :tl1 + 4003);
INSERT INTO jobs VALUES (11, 'after release', NULL);
ROLLBACK;
-- a write that expires mid-transaction is refused from then on
SELECT lease_renew('sched', 'leader-3', :tl1 + 4003, '2s') IS NOT NULL AS renewed;
BEGIN;
SELECT lease_use('sched', :tl1 + 4003);
INSERT INTO jobs VALUES (12, 'in time', NULL);
SELECT pg_sleep(2.2);
INSERT INTO jobs VALUES (13, 'too late', NULL);
ROLLBACK;

-- INSERT ... ON CONFLICT DO UPDATE is checked on both paths
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('sched', 'leader-4', '30s');
INSERT INTO jobs VALUES (2, 'upsert', :tl1 + 4004) ON CONFLICT (id) DO UPDATE SET state = excluded.state;
INSERT INTO jobs VALUES (2, 'upsert', :tl1 + 4004) ON CONFLICT (id) DO UPDATE SET state = excluded.state, epoch = excluded.epoch;
SELECT id, state, epoch - :tl1 AS epoch FROM jobs WHERE id = 2;

-- bad fences
CREATE TABLE wrong_type (id int, epoch int);
SELECT lease_fence('wrong_type', 'sched');
SELECT lease_fence('jobs', 'sched', 'no_such_column');
CREATE VIEW jobs_view AS SELECT * FROM jobs;
SELECT lease_fence('jobs_view', 'sched');
-- a fenced column dropped later is reported, not ignored
CREATE TABLE dropped (id int, epoch bigint);
SELECT lease_fence('dropped', 'sched');
ALTER TABLE dropped DROP COLUMN epoch;
INSERT INTO dropped VALUES (1);

-- unfence removes both triggers; writes are free again
SELECT lease_unfence('jobs');
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'jobs'::regclass;
INSERT INTO jobs VALUES (14, 'unfenced', NULL);
SELECT lease_unfence('jobs');
-- the trigger function cannot be called directly
SELECT lease_fence_trigger();

-- a fenced partitioned table fences its partitions, also ones attached later
CREATE TABLE parted (id int, epoch bigint) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
SELECT lease_fence('parted', 'sched');
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (100) TO (200);
INSERT INTO parted VALUES (1, NULL);
INSERT INTO parted VALUES (150, NULL);
INSERT INTO parted_2 VALUES (150, NULL);
INSERT INTO parted VALUES (1, :tl1 + 4004), (150, :tl1 + 4004);
UPDATE parted SET id = 160 WHERE id = 1;
SELECT * FROM parted ORDER BY id;

DROP TABLE jobs, other_col, wrong_type, dropped, parted CASCADE;
