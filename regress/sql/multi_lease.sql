-- one transaction, several leases (issue 27, item 1): each fenced table is
-- judged by its own lease's token, in every order of first writes; a token
-- of one lease never passes another's fence; a stale token of B is refused
-- even after A's table was written in the same transaction. Tokens are
-- declared with lease_use and with a pg_lease.epoch list.
\set VERBOSITY sqlstate

CREATE TABLE ml_a (id int, epoch bigint);
CREATE TABLE ml_b (id int, epoch bigint);
CREATE TABLE ml_c (id int, epoch bigint);
SELECT lease_fence('ml_a', 'ml-a');
SELECT lease_fence('ml_b', 'ml-b');
SELECT lease_fence('ml_c', 'ml-c');
SELECT acquired FROM lease_acquire('ml-a', 'leader-a', '5min');
SELECT acquired FROM lease_acquire('ml-b', 'leader-b', '5min');
SELECT acquired FROM lease_acquire('ml-c', 'leader-c', '5min');
SELECT epoch AS ea FROM leases WHERE name = 'ml-a' \gset
SELECT epoch AS eb FROM leases WHERE name = 'ml-b' \gset
SELECT epoch AS ec FROM leases WHERE name = 'ml-c' \gset

-- Runs one write per letter of `seq` (a: ml_a, b: ml_b, c: ml_c, in that
-- order) in the caller's transaction, each in its own block, and reports
-- what became of each: ok, or the SQLSTATE it was refused with. A block
-- that passed stays part of the transaction.
CREATE FUNCTION ml_writes(seq text, id int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	out text := '';
	l text;
BEGIN
	FOREACH l IN ARRAY regexp_split_to_array(seq, '') LOOP
		BEGIN
			EXECUTE format('INSERT INTO ml_%s VALUES ($1, NULL)', l) USING id;
			out := out || l || ':ok ';
		EXCEPTION WHEN OTHERS THEN
			out := out || l || ':' || SQLSTATE || ' ';
		END;
	END LOOP;
	RETURN rtrim(out);
END $$;
-- Declares a token per lease with lease_use, then ml_writes.
CREATE FUNCTION ml_try(seq text, id int, ta bigint, tb bigint, tc bigint) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM lease_use('ml-a', ta), lease_use('ml-b', tb), lease_use('ml-c', tc);
	RETURN ml_writes(seq, id);
END $$;

-- every order of first writes, each in a transaction of its own, tokens
-- declared with lease_use: all pass, each row stamped with its own lease's epoch
BEGIN; SELECT ml_try('abc', 1, :ea, :eb, :ec); COMMIT;
BEGIN; SELECT ml_try('acb', 2, :ea, :eb, :ec); COMMIT;
BEGIN; SELECT ml_try('bac', 3, :ea, :eb, :ec); COMMIT;
BEGIN; SELECT ml_try('bca', 4, :ea, :eb, :ec); COMMIT;
BEGIN; SELECT ml_try('cab', 5, :ea, :eb, :ec); COMMIT;
BEGIN; SELECT ml_try('cba', 6, :ea, :eb, :ec); COMMIT;
SELECT format('%s,%s,%s', :ec, :ea, :eb) AS elist \gset
-- the same through a pg_lease.epoch list (each lease picks its own epoch)
BEGIN; SET LOCAL pg_lease.epoch = :'elist'; SELECT ml_writes('abc', 11); COMMIT;
BEGIN; SET LOCAL pg_lease.epoch = :'elist'; SELECT ml_writes('cba', 12); COMMIT;
BEGIN; SET LOCAL pg_lease.epoch = :'elist'; SELECT ml_writes('bac', 13); COMMIT;
SELECT 'a' AS t, count(*), bool_and(epoch = :ea) AS own_epoch FROM ml_a
UNION ALL SELECT 'b', count(*), bool_and(epoch = :eb) FROM ml_b
UNION ALL SELECT 'c', count(*), bool_and(epoch = :ec) FROM ml_c;

-- plain transactions, both orders of two leases, rows stamped by their own lease
BEGIN;
SELECT lease_use('ml-a', :ea), lease_use('ml-b', :eb);
INSERT INTO ml_a VALUES (100, NULL);
INSERT INTO ml_b VALUES (100, NULL);
INSERT INTO ml_a VALUES (101, NULL);
COMMIT;
BEGIN;
SELECT lease_use('ml-b', :eb), lease_use('ml-a', :ea);
INSERT INTO ml_b VALUES (102, NULL);
INSERT INTO ml_a VALUES (102, NULL);
INSERT INTO ml_b VALUES (103, NULL);
COMMIT;
SELECT 'a' AS t, id, epoch = :ea AS own_epoch FROM ml_a WHERE id >= 100
UNION ALL SELECT 'b', id, epoch = :eb FROM ml_b WHERE id >= 100 ORDER BY 1, 2;

-- a token of lease A never passes lease B's fence (nor the other way),
-- whichever table is written first
BEGIN;
SELECT lease_use('ml-a', :ea), lease_use('ml-b', :ea);
INSERT INTO ml_a VALUES (200, NULL);
INSERT INTO ml_b VALUES (200, NULL);
ROLLBACK;
BEGIN;
SELECT lease_use('ml-b', :ea);
INSERT INTO ml_b VALUES (201, NULL);
ROLLBACK;
BEGIN;
SELECT lease_use('ml-a', :eb), lease_use('ml-b', :eb);
INSERT INTO ml_b VALUES (202, NULL);
INSERT INTO ml_a VALUES (202, NULL);
ROLLBACK;
-- A's token declared, none for B: B's write has no token (its row's own
-- epoch column is not a token of another lease either)
BEGIN;
SELECT lease_use('ml-a', :ea);
INSERT INTO ml_a VALUES (203, NULL);
INSERT INTO ml_b VALUES (203, NULL);
ROLLBACK;
BEGIN;
SELECT lease_use('ml-a', :ea);
INSERT INTO ml_a VALUES (204, NULL);
INSERT INTO ml_b VALUES (204, :ea);
ROLLBACK;
-- a pg_lease.epoch list naming only A's epoch: B's write is refused
BEGIN;
SELECT set_config('pg_lease.epoch', :'ea', true) IS NOT NULL AS set;
INSERT INTO ml_a VALUES (205, NULL);
INSERT INTO ml_b VALUES (205, NULL);
ROLLBACK;
-- through the blocks, every order: A's token for everything
BEGIN; SELECT ml_try('abc', 206, :ea, :ea, :ea); ROLLBACK;
BEGIN; SELECT ml_try('bca', 206, :ea, :ea, :ea); ROLLBACK;
BEGIN; SELECT ml_try('cab', 206, :ea, :ea, :ea); ROLLBACK;

-- B changes holder: B's old token is stale, also after A's table was
-- written in the same transaction, in either order
SELECT lease_revoke('ml-b');
SELECT acquired FROM lease_acquire('ml-b', 'leader-b2', '5min');
SELECT epoch AS eb2 FROM leases WHERE name = 'ml-b' \gset
BEGIN;
SELECT lease_use('ml-a', :ea), lease_use('ml-b', :eb);
INSERT INTO ml_a VALUES (300, NULL);
INSERT INTO ml_b VALUES (300, NULL);
ROLLBACK;
BEGIN;
SELECT lease_use('ml-a', :ea), lease_use('ml-b', :eb);
INSERT INTO ml_b VALUES (301, NULL);
ROLLBACK;
-- the row's epoch column as B's (stale) token, after A's write
BEGIN;
SELECT lease_use('ml-a', :ea);
INSERT INTO ml_a VALUES (302, NULL);
INSERT INTO ml_b VALUES (302, :eb);
ROLLBACK;
-- a pg_lease.epoch list with A's current epoch and B's old one
BEGIN;
SELECT set_config('pg_lease.epoch', format('%s,%s', :ea, :eb), true) IS NOT NULL AS set;
INSERT INTO ml_a VALUES (303, NULL);
INSERT INTO ml_b VALUES (303, NULL);
ROLLBACK;
BEGIN;
SELECT set_config('pg_lease.epoch', format('%s,%s', :eb, :ea), true) IS NOT NULL AS set;
INSERT INTO ml_a VALUES (304, NULL);
INSERT INTO ml_a VALUES (305, NULL);
INSERT INTO ml_b VALUES (304, NULL);
ROLLBACK;
-- every order through the blocks: A and C pass, stale B refused (LS001)
BEGIN; SELECT ml_try('abc', 306, :ea, :eb, :ec); ROLLBACK;
BEGIN; SELECT ml_try('acb', 306, :ea, :eb, :ec); ROLLBACK;
BEGIN; SELECT ml_try('bac', 306, :ea, :eb, :ec); ROLLBACK;
BEGIN; SELECT ml_try('bca', 306, :ea, :eb, :ec); ROLLBACK;
BEGIN; SELECT ml_try('cab', 306, :ea, :eb, :ec); ROLLBACK;
BEGIN; SELECT ml_try('cba', 306, :ea, :eb, :ec); ROLLBACK;
-- B's new token passes beside A's
BEGIN;
SELECT lease_use('ml-a', :ea), lease_use('ml-b', :eb2);
INSERT INTO ml_a VALUES (307, NULL);
INSERT INTO ml_b VALUES (307, NULL);
COMMIT;
-- B released: its latest token is refused as not held (LS002), A's still passes
SELECT lease_release('ml-b', 'leader-b2', :eb2);
BEGIN;
SELECT lease_use('ml-a', :ea), lease_use('ml-b', :eb2);
INSERT INTO ml_a VALUES (308, NULL);
INSERT INTO ml_b VALUES (308, NULL);
ROLLBACK;

-- what committed: every row under its own lease's grant of the time
SELECT 'a' AS t, id, epoch = :ea AS own_epoch FROM ml_a WHERE id >= 200
UNION ALL SELECT 'b', id, epoch = :eb2 FROM ml_b WHERE id >= 200
UNION ALL SELECT 'c', id, epoch = :ec FROM ml_c WHERE id >= 200 ORDER BY 1, 2;

DROP FUNCTION ml_try(text, int, bigint, bigint, bigint);
DROP FUNCTION ml_writes(text, int);
DROP TABLE ml_a, ml_b, ml_c;
