-- lease_renew_many with an old epoch (issue 27, item 5): a holder whose
-- lease expired and was granted again, to itself (a new epoch) or to
-- another holder, gets NULL for the entry naming the old epoch, while the
-- other entries of the batch renew; the lease of the NULL entry is left
-- exactly as it was (holder, epoch, expiry, ttl).
\set VERBOSITY sqlstate

SELECT acquired FROM lease_acquire('rm-self', 'worker', '200ms');
SELECT acquired FROM lease_acquire('rm-other', 'worker', '200ms');
SELECT acquired FROM lease_acquire('rm-kept-1', 'worker', '5min');
SELECT acquired FROM lease_acquire('rm-kept-2', 'worker', '5min');
SELECT acquired FROM lease_acquire('rm-lapsed', 'worker', '200ms');
SELECT epoch AS self_old FROM leases WHERE name = 'rm-self' \gset
SELECT epoch AS other_old FROM leases WHERE name = 'rm-other' \gset
SELECT epoch AS kept1 FROM leases WHERE name = 'rm-kept-1' \gset
SELECT epoch AS kept2 FROM leases WHERE name = 'rm-kept-2' \gset
SELECT epoch AS lapsed FROM leases WHERE name = 'rm-lapsed' \gset
-- all three short leases expire
SELECT pg_sleep(0.4);
SELECT name, valid FROM lease_status WHERE name LIKE 'rm-%' ORDER BY name;
-- granted again: rm-self to the same holder (a new epoch), rm-other to
-- another holder; rm-lapsed stays expired
SELECT acquired, epoch <> :self_old AS new_epoch FROM lease_acquire('rm-self', 'worker', '30s');
SELECT acquired, epoch <> :other_old AS new_epoch FROM lease_acquire('rm-other', 'rival', '30s');
SELECT epoch AS self_new FROM leases WHERE name = 'rm-self' \gset
SELECT epoch AS other_new FROM leases WHERE name = 'rm-other' \gset
SELECT expires_at AS self_expires FROM leases WHERE name = 'rm-self' \gset
SELECT expires_at AS other_expires FROM leases WHERE name = 'rm-other' \gset

-- one batch naming the old epochs between current ones: NULL for the old
-- epochs (and the lapsed lease), a renewal with the new ttl for the others
SELECT name, expires_at IS NOT NULL AS renewed,
       expires_at > clock_timestamp() + interval '50 minutes' AS new_ttl
  FROM lease_renew_many(ARRAY['rm-kept-1', 'rm-self', 'rm-other', 'rm-lapsed', 'rm-kept-2'], 'worker',
                        ARRAY[:kept1, :self_old, :other_old, :lapsed, :kept2]::bigint[], '1 hour');
-- the leases of the NULL entries are untouched
SELECT name, holder, epoch = CASE name WHEN 'rm-self' THEN :self_new ELSE :other_new END AS epoch_kept,
       expires_at = CASE name WHEN 'rm-self' THEN :'self_expires'::timestamptz
                              ELSE :'other_expires'::timestamptz END AS expiry_kept,
       ttl
  FROM leases WHERE name IN ('rm-self', 'rm-other') ORDER BY name;
SELECT name, holder, ttl FROM leases WHERE name LIKE 'rm-kept-%' ORDER BY name;
-- lease rm-other has a new epoch too, granted to the rival: the worker
-- naming that current epoch is still not its holder
SELECT name, expires_at IS NOT NULL AS renewed
  FROM lease_renew_many(ARRAY['rm-other', 'rm-kept-1'], 'worker', ARRAY[:other_new, :kept1]::bigint[]);
-- the new epoch of rm-self renews, in the same batch as its old one
SELECT name, expires_at IS NOT NULL AS renewed
  FROM lease_renew_many(ARRAY['rm-self', 'rm-self', 'rm-kept-2'], 'worker',
                        ARRAY[:self_old, :self_new, :kept2]::bigint[]);
-- the renewals wrote no events: only the grants and the takeovers of the expired leases
SELECT name, event, holder = 'worker' AS by_worker, epoch IN (:self_old, :other_old) AS old_epoch
  FROM lease_events WHERE name IN ('rm-self', 'rm-other') ORDER BY id;
