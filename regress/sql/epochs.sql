-- epochs: one counter for all leases, strictly increasing, timeline in the high bits
\set VERBOSITY sqlstate
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 3000);

CREATE TEMP TABLE grants (n serial, name text, epoch bigint);
INSERT INTO grants (name, epoch) SELECT 'e1', epoch FROM lease_acquire('e1', 'a', '30s');
INSERT INTO grants (name, epoch) SELECT 'e2', epoch FROM lease_acquire('e2', 'a', '30s');
-- renew and re-acquire by the holder do not change the epoch
SELECT lease_renew('e1', 'a', (SELECT max(epoch) FROM grants WHERE name = 'e1')) IS NOT NULL AS renewed;
SELECT (SELECT epoch FROM lease_acquire('e1', 'a', '30s')) = (SELECT max(epoch) FROM grants WHERE name = 'e1') AS same_epoch;
-- release, then a new grant
SELECT lease_release('e1', 'a', (SELECT max(epoch) FROM grants WHERE name = 'e1'));
INSERT INTO grants (name, epoch) SELECT 'e1', epoch FROM lease_acquire('e1', 'b', '30s');
-- revoke, then a new grant
SELECT lease_revoke('e1');
INSERT INTO grants (name, epoch) SELECT 'e1', epoch FROM lease_acquire('e1', 'a', '30s');
-- expiry, then a takeover
SELECT lease_release('e1', 'a', (SELECT max(epoch) FROM grants WHERE name = 'e1'));
INSERT INTO grants (name, epoch) SELECT 'e1', epoch FROM lease_acquire('e1', 'a', '50ms');
SELECT pg_sleep(0.2);
INSERT INTO grants (name, epoch) SELECT 'e1', epoch FROM lease_acquire('e1', 'b', '30s');
-- deleting the row (a superuser can) does not reset the epoch
DELETE FROM leases WHERE name = 'e1';
INSERT INTO grants (name, epoch) SELECT 'e1', epoch FROM lease_acquire('e1', 'c', '30s');
DELETE FROM leases;
INSERT INTO grants (name, epoch) SELECT 'e1', epoch FROM lease_acquire('e1', 'a', '30s');

SELECT n, name, epoch - :tl1 AS epoch FROM grants ORDER BY n;
-- strictly increasing per lease, in grant order
SELECT bool_and(epoch > prev) AS strictly_increasing
  FROM (SELECT epoch, lag(epoch) OVER (PARTITION BY name ORDER BY n) AS prev FROM grants) g
 WHERE prev IS NOT NULL;
-- unique across leases
SELECT count(*) = count(DISTINCT epoch) AS unique_epochs FROM grants;
-- the high bits are the WAL timeline of the server that granted them
SELECT DISTINCT epoch >> 47 = (SELECT timeline_id FROM pg_control_checkpoint()) AS timeline_bits FROM grants;
SELECT DISTINCT epoch & ((1::bigint << 47) - 1) > 3000 AS counter_bits FROM grants;
-- lease_events holds the same grants in the same order
SELECT (SELECT array_agg(epoch ORDER BY n) FROM grants WHERE name = 'e1') =
       (SELECT array_agg(epoch ORDER BY id) FROM lease_events
         WHERE name = 'e1' AND event IN ('acquired', 'takeover') AND epoch - :tl1 > 3000) AS same_history;

-- a failed grant (refused) does not consume an epoch
SELECT acquired FROM lease_acquire('e1', 'z', '30s');
INSERT INTO grants (name, epoch) SELECT 'e3', epoch FROM lease_acquire('e3', 'a', '30s');
SELECT (SELECT epoch FROM grants WHERE name = 'e3') - (SELECT max(epoch) FROM grants WHERE name <> 'e3') AS gap;
-- the counter is capped below the timeline bits
SELECT seqmax = (1::bigint << 47) - 1 AS counter_capped FROM pg_sequence WHERE seqrelid = 'lease_epoch_seq'::regclass;
