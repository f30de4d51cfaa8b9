-- direct writes: the lease functions change lease rows and append to
-- lease_events through the table AM, maintaining indexes themselves, and
-- fall back to the executor whenever it would do more (triggers, other
-- columns); retention prunes a lease at most once per tenth of it
\set VERBOSITY sqlstate
SELECT repeat('h', 255) AS long_holder \gset

-- 1. Renewals that cannot stay on the row's page (a long holder, 100
-- versions in one transaction): some are not HOT, so the primary key gets
-- new entries, and an index scan finds the row as a sequential scan does.
SELECT epoch AS e FROM lease_acquire('direct-nonhot', :'long_holder', '1h') \gset
BEGIN;
-- statistics are not flushed within a transaction block: count from here
SELECT n_tup_upd AS upd0, n_tup_hot_upd AS hot0
  FROM pg_stat_xact_user_tables WHERE relid = 'leases'::regclass \gset
SELECT count(lease_renew('direct-nonhot', :'long_holder', :e)) AS renewed
  FROM generate_series(1, 100);
SELECT n_tup_upd - :upd0 AS updated, n_tup_hot_upd - :hot0 < n_tup_upd - :upd0 AS some_not_hot
  FROM pg_stat_xact_user_tables WHERE relid = 'leases'::regclass;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT renewed_at FROM leases WHERE name = 'direct-nonhot';
SELECT count(*) AS rows, max(renewed_at) AS by_index FROM leases WHERE name = 'direct-nonhot' \gset
SET LOCAL enable_indexscan = off;
SET LOCAL enable_seqscan = on;
SELECT :rows AS rows_by_index, count(*) AS rows_by_seqscan, max(renewed_at) = :'by_index' AS same_row
  FROM leases WHERE name = 'direct-nonhot';
COMMIT;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT holder = :'long_holder' AS holder_kept, epoch = :e AS epoch_kept,
       lease_renew('direct-nonhot', :'long_holder', :e) IS NOT NULL AS renews
  FROM leases WHERE name = 'direct-nonhot';
RESET enable_seqscan;
RESET enable_bitmapscan;

-- 2. A grant to another role changes owner_role, which is indexed: never
-- HOT, so leases_owner_role_idx gets the new entry.
CREATE ROLE regress_direct; GRANT regress_direct TO CURRENT_USER;
SELECT epoch AS e FROM lease_acquire('direct-owner', 'a', '1h') \gset
SELECT lease_release('direct-owner', 'a', :e);
BEGIN;
SELECT n_tup_upd AS upd0, n_tup_hot_upd AS hot0
  FROM pg_stat_xact_user_tables WHERE relid = 'leases'::regclass \gset
SET LOCAL ROLE regress_direct;
SELECT acquired FROM lease_acquire('direct-owner', 'b', '1h');
RESET ROLE;
SELECT n_tup_upd - :upd0 AS updated, n_tup_hot_upd - :hot0 AS hot
  FROM pg_stat_xact_user_tables WHERE relid = 'leases'::regclass;
COMMIT;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT name FROM leases WHERE owner_role = 'regress_direct';
SELECT name, holder FROM leases WHERE owner_role = 'regress_direct';
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT lease_revoke('direct-owner');

-- 3. Triggers on leases or lease_events: the executor writes, so they fire
-- (the lease functions pin search_path, hence public.direct_log).
CREATE TABLE direct_log (id serial, what text, holder text);
CREATE FUNCTION direct_log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.direct_log (what, holder) VALUES (TG_TABLE_NAME || ' ' || TG_OP, NEW.holder);
	RETURN NEW;
END
$$;
CREATE TRIGGER direct_log AFTER INSERT OR UPDATE ON leases
	FOR EACH ROW EXECUTE FUNCTION direct_log_row();
CREATE TRIGGER direct_log AFTER INSERT ON lease_events
	FOR EACH ROW EXECUTE FUNCTION direct_log_row();
SELECT epoch AS e FROM lease_acquire('direct-trigger', 't', '1h') \gset
SELECT lease_renew('direct-trigger', 't', :e) IS NOT NULL AS renewed;
SELECT lease_release('direct-trigger', 't', :e);
SELECT acquired FROM lease_acquire('direct-trigger', 'u', '1h');
SELECT what, holder FROM direct_log ORDER BY id;
-- triggers dropped: nothing more is logged
DROP TRIGGER direct_log ON leases;
DROP TRIGGER direct_log ON lease_events;
SELECT lease_revoke('direct-trigger');
SELECT count(*) AS logged FROM direct_log;
SELECT event, holder FROM lease_events WHERE name = 'direct-trigger' ORDER BY id;
DROP TABLE direct_log;
DROP FUNCTION direct_log_row();

-- 4. Columns the direct path does not write: the executor fills their defaults.
BEGIN;
ALTER TABLE lease_events ADD COLUMN note text DEFAULT 'by default';
SELECT acquired FROM lease_acquire('direct-shape', 's', '1h');
SELECT event, holder, note FROM lease_events WHERE name = 'direct-shape';
ROLLBACK;
SELECT acquired FROM lease_acquire('direct-shape', 's', '1h');
SELECT event, holder FROM lease_events WHERE name = 'direct-shape';

-- 5. lease_events ids come from the identity sequence in order; times never go back.
SELECT epoch AS e FROM lease_acquire('direct-ids', 'a', '1h') \gset
SELECT lease_release('direct-ids', 'a', :e);
SELECT acquired FROM lease_acquire('direct-ids', 'b', '1h');
SELECT lease_revoke('direct-ids');
SELECT count(*) AS events, bool_and(id > prev_id) AS ids_increase,
       bool_and(time >= prev_time) AS times_ordered, bool_and(time <= clock_timestamp()) AS past
  FROM (SELECT id, time, lag(id) OVER w AS prev_id, lag(time) OVER w AS prev_time
          FROM lease_events WHERE name = 'direct-ids' WINDOW w AS (ORDER BY id)) e
 WHERE prev_id IS NOT NULL;
SELECT max(id) = currval(pg_get_serial_sequence('lease_events', 'id')) AS from_identity
  FROM lease_events;
-- the CHECK constraints stay for other writers
INSERT INTO lease_events (event, name, epoch, role) VALUES ('bogus', 'direct-ids', 1, current_user);
UPDATE leases SET holder = '' WHERE name = 'direct-ids';

-- 6. Retention: a session prunes a lease's expired events at most once per
-- tenth of pg_lease.event_retention (here 6 minutes).
SET pg_lease.event_retention = '1h';
SELECT acquired FROM lease_acquire('direct-retained', 'a', '1h');
INSERT INTO lease_events (time, event, name, holder, epoch, role)
	VALUES (clock_timestamp() - interval '2h', 'acquired', 'direct-retained', 'old', 1, current_user);
-- this session pruned the lease a moment ago: the old event stays for now
SELECT lease_revoke('direct-retained');
SELECT count(*) FILTER (WHERE holder = 'old') AS old_events FROM lease_events WHERE name = 'direct-retained';
-- another session prunes at its first event of the lease
\c
\set VERBOSITY sqlstate
SET pg_lease.event_retention = '1h';
SELECT acquired FROM lease_acquire('direct-retained', 'b', '1h');
SELECT count(*) FILTER (WHERE holder = 'old') AS old_events FROM lease_events WHERE name = 'direct-retained';
SELECT lease_revoke('direct-retained');
-- a prune that rolls back does not count: the next event prunes again
\c
\set VERBOSITY sqlstate
SET pg_lease.event_retention = '1h';
INSERT INTO lease_events (time, event, name, holder, epoch, role)
	VALUES (clock_timestamp() - interval '2h', 'acquired', 'direct-retained', 'old', 1, current_user);
BEGIN;
SELECT acquired FROM lease_acquire('direct-retained', 'c', '1h');
SELECT count(*) FILTER (WHERE holder = 'old') AS old_events FROM lease_events WHERE name = 'direct-retained';
ROLLBACK;
SELECT count(*) FILTER (WHERE holder = 'old') AS old_events FROM lease_events WHERE name = 'direct-retained';
SELECT acquired FROM lease_acquire('direct-retained', 'c', '1h');
SELECT count(*) FILTER (WHERE holder = 'old') AS old_events FROM lease_events WHERE name = 'direct-retained';
SELECT event, holder FROM lease_events WHERE name = 'direct-retained' ORDER BY id;
RESET pg_lease.event_retention;
-- the events written here by hand, old times included, go
DELETE FROM lease_events WHERE name = 'direct-retained';

DROP ROLE regress_direct;
