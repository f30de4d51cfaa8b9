-- expiry: judged by the server's clock_timestamp(), never by transaction start
\set VERBOSITY sqlstate
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 2000);

SELECT acquired, epoch - :tl1 AS epoch, (SELECT valid FROM lease_status WHERE name = 'short') AS valid FROM lease_acquire('short', 'worker-a', '200ms');
SELECT pg_sleep(0.4);
-- expired: not valid, but the row still names the holder of record
SELECT holder, valid, remaining FROM lease_status WHERE name = 'short';
-- an expired lease is never revived by renew
SELECT lease_renew('short', 'worker-a', :tl1 + 2001) IS NULL AS lost;
SELECT holder, expires_at < clock_timestamp() AS still_expired FROM leases WHERE name = 'short';
-- another holder takes over an expired lease with a new epoch
SELECT acquired, epoch - :tl1 AS epoch, holder FROM lease_acquire('short', 'worker-b', '200ms');
SELECT transitions FROM leases WHERE name = 'short';
SELECT pg_sleep(0.4);
-- the holder of record taking back its own expired lease also gets a new epoch
SELECT acquired, epoch - :tl1 AS epoch, holder FROM lease_acquire('short', 'worker-b', '30s');
SELECT transitions FROM leases WHERE name = 'short';
SELECT event, holder, epoch - :tl1 AS epoch FROM lease_events WHERE name = 'short' ORDER BY id;

-- inside one transaction, time moves on: now() stays, clock_timestamp() does not
BEGIN;
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('in-xact', 'worker-a', '200ms');
SELECT pg_sleep(0.4);
-- by the transaction's start (now()) it would still be valid; by the clock it is not
SELECT expires_at > now() AS valid_by_now, expires_at > clock_timestamp() AS valid_by_clock FROM leases WHERE name = 'in-xact';
SELECT lease_renew('in-xact', 'worker-a', :tl1 + 2004) IS NULL AS lost_despite_now;
SELECT valid FROM lease_status WHERE name = 'in-xact';
SELECT acquired, epoch - :tl1 AS epoch, holder FROM lease_acquire('in-xact', 'worker-b', '30s');
COMMIT;

-- release of an expired lease by its holder of record still frees it
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('expired-release', 'worker-a', '100ms');
SELECT pg_sleep(0.3);
SELECT lease_release('expired-release', 'worker-a', :tl1 + 2006) AS released;
SELECT holder FROM leases WHERE name = 'expired-release';

-- renew before expiry keeps the lease alive past its first expiry, same epoch
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('kept', 'worker-a', '5s');
SELECT expires_at AS first_expiry FROM leases WHERE name = 'kept' \gset
SELECT pg_sleep(0.2);
SELECT lease_renew('kept', 'worker-a', :tl1 + 2007) > :'first_expiry'::timestamptz AS extended;
SELECT valid, epoch - :tl1 AS epoch, expires_at > :'first_expiry'::timestamptz AS later FROM lease_status WHERE name = 'kept';
