-- acquire, renew, release, revoke: the round trips
\set VERBOSITY sqlstate
-- epochs below read as offsets from the first epoch of timeline 1
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 1000);

-- a free (missing) lease is granted with a new epoch
SELECT acquired, epoch - :tl1 AS epoch, holder, expires_at > clock_timestamp() AS in_future FROM lease_acquire('job', 'worker-a', '30s');
SELECT name, holder, epoch - :tl1 AS epoch, ttl, transitions, owner_role = current_user AS by_caller, acquired_at = renewed_at AS fresh FROM leases WHERE name = 'job';
-- the same holder acquiring again extends it with the same epoch
SELECT acquired, epoch - :tl1 AS epoch, holder FROM lease_acquire('job', 'worker-a', '1 minute');
SELECT ttl, renewed_at > acquired_at AS extended FROM leases WHERE name = 'job';
-- another holder is refused and learns who holds it, at which epoch, until when
SELECT acquired, epoch - :tl1 AS epoch, holder, expires_at = (SELECT expires_at FROM leases WHERE name = 'job') AS same_expiry FROM lease_acquire('job', 'worker-b', '30s');
SELECT holder, epoch - :tl1 AS epoch FROM leases WHERE name = 'job';
-- named arguments work as documented
SELECT acquired FROM lease_acquire(name => 'job', holder => 'worker-b', ttl => '5s');

-- renew: new expiry, same epoch; ttl kept when not given, changed when given
SELECT expires_at AS before FROM leases WHERE name = 'job' \gset
SELECT lease_renew('job', 'worker-a', :tl1 + 1001) > :'before'::timestamptz AS later;
SELECT epoch - :tl1 AS epoch, ttl FROM leases WHERE name = 'job';
SELECT lease_renew('job', 'worker-a', :tl1 + 1001, '2 minutes') - clock_timestamp() > '1 minute' AS longer;
SELECT ttl FROM leases WHERE name = 'job';
-- a day in a ttl is 24 hours, stored as plain time
SELECT lease_renew('job', 'worker-a', :tl1 + 1001, '1 day') IS NOT NULL AS renewed;
SELECT ttl FROM leases WHERE name = 'job';
-- renew by the wrong holder or epoch changes nothing and returns null
SELECT lease_renew('job', 'worker-b', :tl1 + 1001) IS NULL AS lost;
SELECT lease_renew('job', 'worker-a', :tl1 + 999) IS NULL AS lost;
SELECT lease_renew('nosuch', 'worker-a', :tl1 + 1001) IS NULL AS lost;
SELECT holder, epoch - :tl1 AS epoch, ttl FROM leases WHERE name = 'job';

-- release: only the grant of record frees it; the epoch is kept
SELECT lease_release('job', 'worker-b', :tl1 + 1001) AS released;
SELECT lease_release('job', 'worker-a', :tl1 + 1000) AS released;
SELECT lease_release('nosuch', 'worker-a', :tl1 + 1001) AS released;
SELECT lease_release('job', 'worker-a', :tl1 + 1001) AS released;
SELECT holder, epoch - :tl1 AS epoch, expires_at <= clock_timestamp() AS ended FROM leases WHERE name = 'job';
SELECT lease_release('job', 'worker-a', :tl1 + 1001) AS released_twice;
-- a released lease cannot be renewed
SELECT lease_renew('job', 'worker-a', :tl1 + 1001) IS NULL AS lost;
-- the next grant gets a new, larger epoch; the holder changed, so transitions counts it
SELECT acquired, epoch - :tl1 AS epoch, holder FROM lease_acquire('job', 'worker-b', '30s');
SELECT transitions FROM leases WHERE name = 'job';
-- the same holder taking a free lease again also gets a new epoch
SELECT lease_release('job', 'worker-b', :tl1 + 1002);
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('job', 'worker-b', '30s');
SELECT transitions FROM leases WHERE name = 'job';

-- lease_status: valid and remaining by the server clock
SELECT name, holder, valid, remaining > '25s' AND remaining <= '30s' AS remaining_ok FROM lease_status WHERE name = 'job';

-- revoke frees it whoever holds it; a free lease is not revoked twice
SELECT lease_revoke('job');
SELECT lease_revoke('job');
SELECT lease_revoke('nosuch');
SELECT holder, epoch - :tl1 AS epoch FROM leases WHERE name = 'job';
SELECT name, valid, remaining FROM lease_status WHERE name = 'job';
SELECT lease_renew('job', 'worker-b', :tl1 + 1003) IS NULL AS lost;

-- several leases are independent
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('shard-1', 'worker-a', '30s');
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('shard-2', 'worker-b', '30s');
SELECT name, holder FROM leases WHERE name LIKE 'shard-%' ORDER BY name;

-- renewing many leases of one holder in one statement: NULL for each one lost
SELECT acquired FROM lease_acquire('shard-3', 'worker-a', '30s');
SELECT name, expires_at > clock_timestamp() AS renewed
  FROM lease_renew_many(ARRAY['shard-1', 'shard-3', 'shard-2', 'nosuch'], 'worker-a',
                        ARRAY[(SELECT epoch FROM leases WHERE name = 'shard-1'),
                              (SELECT epoch FROM leases WHERE name = 'shard-3'),
                              (SELECT epoch FROM leases WHERE name = 'shard-2'), 1], '1 minute');
SELECT name, ttl FROM leases WHERE name LIKE 'shard-%' ORDER BY name;
SELECT * FROM lease_renew_many(ARRAY['a', 'b'], 'worker-a', ARRAY[1]);
SELECT * FROM lease_renew_many(NULL, 'worker-a', ARRAY[1]);
SELECT * FROM lease_renew_many(ARRAY['a'], 'worker-a', ARRAY[1], '0s');
SELECT count(*) FROM lease_renew_many('{}', 'worker-a', '{}');

-- every function raises synchronous_commit for its transaction when it is off or local,
-- but lease_release: a lost release only keeps the lease until its ttl
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT acquired FROM lease_acquire('durable', 'worker-a', '30s');
SHOW synchronous_commit;
COMMIT;
BEGIN;
SET LOCAL synchronous_commit = local;
SELECT lease_renew('durable', 'worker-a', (SELECT epoch FROM leases WHERE name = 'durable')) IS NOT NULL AS renewed;
SHOW synchronous_commit;
COMMIT;
BEGIN;
SET LOCAL synchronous_commit = remote_apply;
SELECT lease_release('durable', 'worker-a', (SELECT epoch FROM leases WHERE name = 'durable'));
SHOW synchronous_commit;
COMMIT;
SELECT acquired FROM lease_acquire('durable', 'worker-a', '30s');
BEGIN;
SET LOCAL synchronous_commit = off;
SELECT lease_release('durable', 'worker-a', (SELECT epoch FROM leases WHERE name = 'durable'));
SHOW synchronous_commit;
COMMIT;
-- and only for its transaction
SET synchronous_commit = off;
SELECT acquired FROM lease_acquire('durable', 'worker-a', '30s');
SHOW synchronous_commit;
RESET synchronous_commit;

-- a rolled-back grant leaves nothing behind
BEGIN;
SELECT acquired FROM lease_acquire('rolled-back', 'worker-a', '30s');
ROLLBACK;
SELECT count(*) FROM leases WHERE name = 'rolled-back';
SELECT count(*) FROM lease_events WHERE name = 'rolled-back';
