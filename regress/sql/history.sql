-- history: lease_events records grants, takeovers, releases and revokes, not renewals
\set VERBOSITY sqlstate
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 6000);

SELECT acquired FROM lease_acquire('hist', 'a', '30s');
SELECT lease_renew('hist', 'a', :tl1 + 6001) IS NOT NULL AS renewed;
SELECT acquired FROM lease_acquire('hist', 'a', '30s');
SELECT acquired FROM lease_acquire('hist', 'b', '30s');
SELECT lease_release('hist', 'a', :tl1 + 6001);
SELECT acquired FROM lease_acquire('hist', 'b', '100ms');
SELECT pg_sleep(0.3);
SELECT acquired FROM lease_acquire('hist', 'c', '30s');
SELECT lease_revoke('hist');
SELECT event, name, holder, epoch - :tl1 AS epoch, role = current_user AS by_caller,
       time <= clock_timestamp() AS past,
       CASE WHEN event IN ('released', 'revoked') THEN expires_at <= time ELSE expires_at > time END AS expiry_ok
  FROM lease_events WHERE name = 'hist' ORDER BY id;
-- ids follow commit order; times never go back
SELECT bool_and(time >= prev) AS ordered
  FROM (SELECT time, lag(time) OVER (ORDER BY id) AS prev FROM lease_events) e WHERE prev IS NOT NULL;
-- events of a rolled-back grant are rolled back too
BEGIN;
SELECT acquired FROM lease_acquire('hist-rollback', 'a', '30s');
ROLLBACK;
SELECT count(*) FROM lease_events WHERE name = 'hist-rollback';
