-- lock_delay: after a grant is lost without release, no other holder is
-- granted the lease until the delay has passed; release skips it
\set VERBOSITY sqlstate
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 11000);

-- recorded at grant time, shown in lease_status; 0 by default
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('plain', 'a', '30s');
SELECT lock_delay FROM lease_status WHERE name = 'plain';
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('delayed', 'a', '200ms', '2s');
SELECT lock_delay, valid FROM lease_status WHERE name = 'delayed';
-- renew keeps it
SELECT lease_renew('delayed', 'a', :tl1 + 11002) IS NOT NULL AS renewed;
SELECT lock_delay FROM leases WHERE name = 'delayed';

-- expired: others are refused until expiry + lock_delay, and told when
SELECT pg_sleep(0.3);
SELECT valid FROM lease_status WHERE name = 'delayed';
SELECT acquired, holder, epoch - :tl1 AS epoch, expires_at = (SELECT expires_at + lock_delay FROM leases WHERE name = 'delayed') AS until_delay_ends
  FROM lease_acquire('delayed', 'b', '30s');
-- the same under REPEATABLE READ (decided on the locked row)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT acquired FROM lease_acquire('delayed', 'b', '30s');
COMMIT;
-- the holder that lost it may take it back at once (with a new epoch)
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('delayed', 'a', '200ms', '2s');
SELECT pg_sleep(0.3);
SELECT acquired FROM lease_acquire('delayed', 'b', '30s');
-- after the delay another holder is granted it
SELECT pg_sleep(2.2);
SELECT acquired, holder, epoch - :tl1 AS epoch FROM lease_acquire('delayed', 'b', '30s');
SELECT lock_delay FROM leases WHERE name = 'delayed';

-- release skips the delay
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('released', 'a', '30s', '1h');
SELECT lease_release('released', 'a', :tl1 + 11005) AS released;
SELECT lock_delay FROM leases WHERE name = 'released';
SELECT acquired, holder FROM lease_acquire('released', 'b', '30s');

-- revoke keeps it: nobody is granted the lease until it has passed
SELECT acquired, epoch - :tl1 AS epoch FROM lease_acquire('revoked', 'a', '30s', '1s');
SELECT lease_revoke('revoked') AS revoked;
SELECT acquired, holder IS NULL AS no_holder FROM lease_acquire('revoked', 'b', '30s');
SELECT acquired FROM lease_acquire('revoked', 'a', '30s');
SELECT pg_sleep(1.1);
SELECT acquired, holder FROM lease_acquire('revoked', 'b', '30s');

-- handover keeps it: the successor's grant, lost without release (it
-- expires), still holds everyone else off until the delay has passed
SELECT epoch AS ho1 FROM lease_acquire('handed', 'a', '2s', '1h') \gset
SELECT lease_handover('handed', 'a', :ho1, 'b') > :ho1 AS handed_over;
SELECT holder, lock_delay FROM leases WHERE name = 'handed';
DO $$ BEGIN
	WHILE (SELECT expires_at > clock_timestamp() FROM leases WHERE name = 'handed') LOOP
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT acquired, holder FROM lease_acquire('handed', 'c', '30s');

-- bad values
SELECT lease_acquire('x', 'a', '30s', NULL);
SELECT lease_acquire('x', 'a', '30s', '-1s');
SELECT lease_acquire('x', 'a', '30s', '2 days');
SELECT count(*) FROM leases WHERE name = 'x';
