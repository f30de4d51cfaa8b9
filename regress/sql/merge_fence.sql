-- MERGE fires the row fence as INSERT, UPDATE and DELETE do (one of
-- bypass.sql's paths around the fence). PostgreSQL 13 and 14 have no
-- MERGE: there every MERGE below is a syntax error, nothing is written,
-- and merge_fence_1.out is the expected output.
\set VERBOSITY sqlstate
CREATE TABLE merged (id int PRIMARY KEY, amount int, epoch bigint);
SELECT lease_fence('merged', 'merger');
SELECT epoch AS e1 FROM lease_acquire('merger', 'leader', '1h') \gset
INSERT INTO merged VALUES (1, 10, :e1);

-- no token: every action is refused
MERGE INTO merged m USING (VALUES (1, 77)) v(id, amount) ON m.id = v.id
  WHEN MATCHED THEN UPDATE SET amount = v.amount;
MERGE INTO merged m USING (VALUES (3, 77)) v(id, amount) ON m.id = v.id
  WHEN NOT MATCHED THEN INSERT VALUES (v.id, v.amount, NULL);
MERGE INTO merged m USING (VALUES (1, 77)) v(id, amount) ON m.id = v.id
  WHEN MATCHED THEN DELETE;

-- the current grant's token: MERGE writes
BEGIN;
SELECT lease_use('merger', :e1);
MERGE INTO merged m USING (VALUES (1, 77), (3, 33)) v(id, amount) ON m.id = v.id
  WHEN MATCHED THEN UPDATE SET amount = v.amount
  WHEN NOT MATCHED THEN INSERT (id, amount) VALUES (v.id, v.amount);
COMMIT;

-- a newer grant: the old token's MERGE is refused
SELECT lease_revoke('merger');
SELECT epoch > :e1 AS newer FROM lease_acquire('merger', 'successor', '1h');
SET pg_lease.epoch = :e1;
MERGE INTO merged m USING (VALUES (1, 0)) v(id, amount) ON m.id = v.id
  WHEN MATCHED THEN DELETE;
RESET pg_lease.epoch;

SELECT id, amount, epoch = :e1 AS first_grant FROM merged ORDER BY id;
DROP TABLE merged;
SELECT lease_revoke('merger');
