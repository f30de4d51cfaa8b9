-- resource limits: lease names per role, event retention, lease_prune
\set VERBOSITY sqlstate
SELECT setval('lease_epoch_seq', 10000);

-- the settings exist once the library is loaded (any pg_lease call loads it)
LOAD 'pg_lease';
CREATE ROLE regress_looper; GRANT regress_looper TO CURRENT_USER;
SHOW pg_lease.max_leases_per_role;
SHOW pg_lease.event_retention;
-- only a superuser may change them
SET ROLE regress_looper;
SET pg_lease.max_leases_per_role = 0;
SET pg_lease.event_retention = 0;
RESET ROLE;
RESET pg_lease.max_leases_per_role;
RESET pg_lease.event_retention;

-- a role looping over new names hits the limit, loudly (54000)
SET pg_lease.max_leases_per_role = 3;
SET ROLE regress_looper;
SELECT acquired FROM lease_acquire('loop-1', 'l', '1h');
SELECT acquired FROM lease_acquire('loop-2', 'l', '1h');
SELECT acquired FROM lease_acquire('loop-3', 'l', '1h');
SELECT acquired FROM lease_acquire('loop-4', 'l', '1h');
\set VERBOSITY default
SELECT acquired FROM lease_acquire('loop-4', 'l', '1h');
\set VERBOSITY sqlstate
-- names it already has keep working: re-acquire, renew, release, grant again
SELECT acquired FROM lease_acquire('loop-1', 'l', '1h');
SELECT lease_release('loop-1', 'l', (SELECT epoch FROM leases WHERE name = 'loop-1'));
SELECT acquired FROM lease_acquire('loop-1', 'l2', '1h');
RESET ROLE;
-- superusers are not limited
SELECT acquired FROM lease_acquire('loop-super-1', 's', '1h');
RESET pg_lease.max_leases_per_role;
SELECT count(*) FROM leases WHERE owner_role = 'regress_looper';

-- event retention: a new event of a lease deletes its events older than the retention
SET pg_lease.event_retention = '1s';
SELECT acquired FROM lease_acquire('retained', 'a', '1h');
SELECT lease_revoke('retained');
SELECT count(*) AS events FROM lease_events WHERE name = 'retained';
SELECT pg_sleep(1.2);
SELECT acquired FROM lease_acquire('retained', 'b', '1h');
SELECT event, holder FROM lease_events WHERE name = 'retained' ORDER BY id;
-- other leases' history is untouched
SELECT count(*) > 0 AS others_kept FROM lease_events WHERE name LIKE 'loop-%';
SET pg_lease.event_retention = 0;
SELECT lease_revoke('retained');
SELECT count(*) AS kept_forever FROM lease_events WHERE name = 'retained';
RESET pg_lease.event_retention;
-- lease_prune: administrators only; deletes leases free or expired for long enough
SET ROLE regress_looper;
SELECT * FROM lease_prune('0s');
RESET ROLE;
SELECT lease_revoke('loop-2');
SELECT acquired FROM lease_acquire('loop-3', 'l', '1ms');
SELECT pg_sleep(0.05);
SELECT * FROM lease_prune(NULL);
SELECT * FROM lease_prune('-1s');
SELECT max(epoch) AS before FROM lease_events WHERE name = 'loop-2' \gset
SELECT pruned_leases >= 0 AS ran FROM lease_prune('1h');
SELECT name, holder FROM leases WHERE name LIKE 'loop-%' ORDER BY name;
SELECT pruned_leases >= 2 AS pruned, pruned_events > 0 AS events_pruned FROM lease_prune('0s');
-- held leases stay; free and expired ones went
SELECT name, holder FROM leases WHERE name LIKE 'loop-%' ORDER BY name;
SELECT count(*) AS events_left FROM lease_events WHERE name LIKE 'loop-%';
-- the epoch of a pruned name is not reused: its next grant is larger
SET ROLE regress_looper;
SELECT acquired, epoch > :before AS larger FROM lease_acquire('loop-2', 'l', '1h');
RESET ROLE;

RESET pg_lease.max_leases_per_role;

DROP ROLE regress_looper;
