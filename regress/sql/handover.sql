-- handover: the holder grants the lease to a named successor in one step
\set VERBOSITY sqlstate
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 12000);
CREATE TABLE ho_jobs (id int, epoch bigint);
SELECT lease_fence('ho_jobs', 'ho');

SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('ho', 'old', '30s');
SELECT lease_handover('ho', 'old', :tl1 + 12001, 'new') - :tl1 AS new_epoch;
-- the successor has it at once, same ttl, one more transition
SELECT holder, epoch - :tl1 AS epoch, ttl, transitions, valid FROM lease_status WHERE name = 'ho';
-- and learns it by acquiring: same holder, unexpired: same epoch
SELECT acquired, epoch - :tl1 AS epoch, holder FROM lease_acquire('ho', 'new', '30s');
-- the old holder's writes are refused, its renew and release find nothing
BEGIN;
SELECT lease_use('ho', :tl1 + 12001);
INSERT INTO ho_jobs VALUES (1);
ROLLBACK;
SELECT lease_renew('ho', 'old', :tl1 + 12001) IS NULL AS lost;
SELECT lease_release('ho', 'old', :tl1 + 12001) AS released;
-- the successor writes
BEGIN;
SELECT lease_use('ho', :tl1 + 12002);
INSERT INTO ho_jobs VALUES (2);
COMMIT;
SELECT id, epoch - :tl1 AS epoch FROM ho_jobs;
SELECT event, holder, epoch - :tl1 AS epoch FROM lease_events WHERE name = 'ho' ORDER BY id;

-- not the grant of record: null, nothing changes
SELECT lease_handover('ho', 'old', :tl1 + 12001, 'third') IS NULL AS refused;
SELECT lease_handover('ho', 'new', :tl1 + 12001, 'third') IS NULL AS refused;
SELECT lease_handover('missing', 'new', :tl1 + 12002, 'third') IS NULL AS refused;
SELECT holder, epoch - :tl1 AS epoch FROM leases WHERE name = 'ho';
-- an expired grant cannot be handed over
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('ho-short', 'old', '100ms');
SELECT pg_sleep(0.2);
SELECT lease_handover('ho-short', 'old', :tl1 + 12003, 'new') IS NULL AS refused;
-- handing over to oneself is a new grant: the old epoch's writes end
SELECT lease_handover('ho', 'new', :tl1 + 12002, 'new') - :tl1 AS new_epoch;
SELECT transitions FROM leases WHERE name = 'ho';

-- only the role that was granted the lease may hand it over
CREATE ROLE regress_other; GRANT regress_other TO CURRENT_USER;
SET ROLE regress_other;
SELECT lease_handover('ho', 'new', :tl1 + 12004, 'mine');
RESET ROLE;
DROP ROLE regress_other;

-- bad input
SELECT lease_handover('ho', 'new', :tl1 + 12004, NULL);
SELECT lease_handover('ho', 'new', NULL, 'x');
SELECT lease_handover('ho', 'new', :tl1 + 12004, '');
SELECT lease_handover('ho', 'new', :tl1 + 12004, repeat('x', 256));
SELECT lease_handover('ho', 'new', :tl1 + 12004, 'it''s "quoted"') - :tl1 AS new_epoch;
SELECT holder FROM leases WHERE name = 'ho';
