-- pg_lease from psql: acquire, renew, fenced writes, and a stale leader's write refused (LS001).
-- Run: psql -X -v ON_ERROR_STOP=1 -f examples/sql/fence.sql   (connection from PGHOST, PGPORT, ...)
-- psql has no background thread: renew here is a statement; `pglease run` renews for shell jobs.
\set QUIET on
\pset tuples_only on
\pset format unaligned
SET client_min_messages = warning;
\set lease scheduler
\set ttl '2s'
CREATE EXTENSION IF NOT EXISTS pg_lease;
CREATE TABLE IF NOT EXISTS jobs (id int PRIMARY KEY, state text, epoch bigint);
SELECT FROM lease_fence('jobs', :'lease');

-- worker-a takes the lease: the epoch is its fencing token
SELECT epoch AS epoch_a FROM lease_acquire(:'lease', 'worker-a', :'ttl') \gset
\echo worker-a acquired epoch :epoch_a

-- the holder renews before expiry (NULL would mean: lost, stop working)
SELECT lease_renew(:'lease', 'worker-a', :epoch_a) AS until \gset
\echo worker-a renewed until :until

-- a fenced write declares the token in its transaction; the trigger checks and stamps it
BEGIN;
SELECT FROM lease_use(:'lease', :epoch_a);
INSERT INTO jobs VALUES (1, 'started by worker-a')
    ON CONFLICT (id) DO UPDATE SET state = excluded.state;
COMMIT;
\echo worker-a wrote job 1 with epoch :epoch_a

-- worker-a stalls and stops renewing; its lease expires and worker-b takes over
SELECT FROM pg_sleep(2.2);
SELECT epoch AS epoch_b FROM lease_acquire(:'lease', 'worker-b', '30s') \gset
\echo worker-b acquired epoch :epoch_b
SET pg_lease.epoch = :epoch_b;      -- the session form of the token (or PGOPTIONS='-c pg_lease.epoch=...')
UPDATE jobs SET state = 'done by worker-b' WHERE id = 1;
RESET pg_lease.epoch;
\echo worker-b wrote job 1 with epoch :epoch_b

-- worker-a wakes up and writes with its old token: the database refuses it
\set ON_ERROR_STOP 0
\set VERBOSITY terse
BEGIN;
SELECT FROM lease_use(:'lease', :epoch_a);
UPDATE jobs SET state = 'stale write by worker-a' WHERE id = 1;
ROLLBACK;
\set ON_ERROR_STOP 1
\echo worker-a stale write refused: SQLSTATE :LAST_ERROR_SQLSTATE

-- and its renew tells it that it lost the lease
SELECT lease_renew(:'lease', 'worker-a', :epoch_a) IS NULL AS lost \gset
\if :lost
\echo worker-a lost the lease: renew returned NULL; stopping
\endif
SELECT lease_release(:'lease', 'worker-b', :epoch_b) AS released \gset
\echo worker-b released the lease: :released
SELECT format('job 1: %s, epoch %s', state, epoch) FROM jobs WHERE id = 1;
