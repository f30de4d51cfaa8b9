-- takeover: the pg_lease.takeover_timeout setting, the evict event, and who
-- could hold a lease row's fence lock (only the fence trigger may)
\set VERBOSITY sqlstate
-- settings exist once the library is loaded (any pg_lease call, or
-- shared_preload_libraries); a placeholder set earlier is checked then
LOAD 'pg_lease';

-- default 1 s; 0 waits as 1.0 did; a superuser setting
SHOW pg_lease.takeover_timeout;
SET pg_lease.takeover_timeout = 0;
SHOW pg_lease.takeover_timeout;
SET pg_lease.takeover_timeout = '250ms';
SHOW pg_lease.takeover_timeout;
SET pg_lease.takeover_timeout = '2min';
SHOW pg_lease.takeover_timeout;
RESET pg_lease.takeover_timeout;
-- bad values
SET pg_lease.takeover_timeout = -1;
SET pg_lease.takeover_timeout = 'soon';
SET pg_lease.takeover_timeout = '1 fortnight';
SHOW pg_lease.takeover_timeout;
RESET pg_lease.takeover_timeout;
-- an ordinary role may not shorten (or lengthen) the grace of other holders' writers
CREATE ROLE regress_taker; GRANT regress_taker TO CURRENT_USER;
SET ROLE regress_taker;
SET pg_lease.takeover_timeout = '1ms';
SHOW pg_lease.takeover_timeout;
RESET pg_lease.takeover_timeout;
-- nor hold a lease row's lock by other means: key-share locks on leases are
-- the fence trigger's alone, which is what lets a takeover end their holders
SELECT name FROM leases FOR KEY SHARE;
SELECT name FROM leases FOR SHARE;
CREATE TABLE regress_refs (lease text REFERENCES leases (name));
RESET ROLE;
DROP ROLE regress_taker;

-- the evict event and its pid column
SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'lease_events_event_check';
SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'lease_events'::regclass AND attname = 'pid';
SELECT col_description('lease_events'::regclass, (SELECT attnum FROM pg_attribute WHERE attrelid = 'lease_events'::regclass AND attname = 'pid'));
-- ordinary roles cannot forge one
CREATE ROLE regress_forger; GRANT regress_forger TO CURRENT_USER;
SET ROLE regress_forger;
INSERT INTO lease_events (event, name, holder, epoch, role, pid) VALUES ('evict', 'x', 'x', 1, 'x', 1);
RESET ROLE;
DROP ROLE regress_forger;
