-- long names (issue 27, item 2): lease names at and near the 255-byte
-- limit that share a prefix much longer than 63 bytes (NAMEDATALEN) go
-- through the per-transaction structures (declared tokens, the fence's
-- kept rows and locks), the rows, the history and the group views without
-- ever being confused with each other.
\set VERBOSITY sqlstate

-- la, lb: 255 bytes, differ in the last byte; lc: 201 bytes; ld: la
-- without its last byte (a prefix of la); lm: 255 bytes of two-byte
-- characters and one ASCII byte, sharing la's first 200 bytes
SELECT repeat('p', 200) || repeat('a', 55) AS la,
       repeat('p', 200) || repeat('a', 54) || 'b' AS lb,
       repeat('p', 200) || 'c' AS lc,
       repeat('p', 200) || repeat('a', 54) AS ld,
       repeat('p', 200) || repeat('é', 27) || 'a' AS lm \gset
SELECT octet_length(:'la') AS la, octet_length(:'lb') AS lb, octet_length(:'lc') AS lc,
       octet_length(:'ld') AS ld, octet_length(:'lm') AS lm;
-- one byte more is refused
SELECT acquired FROM lease_acquire(:'la' || 'x', 'h', '5min');
SELECT acquired FROM lease_acquire(repeat('p', 200) || repeat('é', 28), 'h', '5min');

SELECT acquired FROM lease_acquire(:'la', 'holder-a', '5min');
SELECT acquired FROM lease_acquire(:'lb', 'holder-b', '5min');
SELECT acquired FROM lease_acquire(:'lc', 'holder-c', '5min');
SELECT acquired FROM lease_acquire(:'ld', 'holder-d', '5min');
SELECT acquired FROM lease_acquire(:'lm', 'holder-m', '5min');
SELECT epoch AS ea FROM leases WHERE name = :'la' \gset
SELECT epoch AS eb FROM leases WHERE name = :'lb' \gset
SELECT epoch AS ec FROM leases WHERE name = :'lc' \gset
SELECT epoch AS ed FROM leases WHERE name = :'ld' \gset
SELECT epoch AS em FROM leases WHERE name = :'lm' \gset
-- five rows, five holders, five epochs
SELECT count(*) AS leases, count(DISTINCT holder) AS holders, count(DISTINCT epoch) AS epochs
  FROM leases WHERE name LIKE repeat('p', 200) || '%';
-- another holder of a long name is refused and told who holds it
SELECT acquired, holder FROM lease_acquire(:'lb', 'holder-a', '5min');
-- renew and release name their own lease only
SELECT lease_renew(:'lb', 'holder-a', :ea) IS NULL AS other_lease_not_renewed;
SELECT lease_renew(:'ld', 'holder-a', :ea) IS NULL AS prefix_lease_not_renewed;
SELECT lease_renew(:'la', 'holder-a', :ea) IS NOT NULL AS own_lease_renewed;
SELECT lease_release(:'lb', 'holder-a', :ea) AS other_lease_released;
SELECT name = :'lb' AS is_lb, holder FROM leases WHERE name = :'lb';

CREATE TABLE ln_a (id int, epoch bigint);
CREATE TABLE ln_b (id int, epoch bigint);
CREATE TABLE ln_c (id int, epoch bigint);
CREATE TABLE ln_d (id int, epoch bigint);
CREATE TABLE ln_m (id int, epoch bigint);
SELECT lease_fence('ln_a', :'la');
SELECT lease_fence('ln_b', :'lb');
SELECT lease_fence('ln_c', :'lc');
SELECT lease_fence('ln_d', :'ld');
SELECT lease_fence('ln_m', :'lm');

-- declared tokens: a token declared for one long name is no token for another
BEGIN;
SELECT lease_use(:'la', :ea);
INSERT INTO ln_b VALUES (1, NULL);
ROLLBACK;
BEGIN;
SELECT lease_use(:'lb', :eb);
INSERT INTO ln_a VALUES (1, NULL);
ROLLBACK;
BEGIN;
SELECT lease_use(:'ld', :ed);
INSERT INTO ln_a VALUES (1, NULL);
ROLLBACK;
BEGIN;
SELECT lease_use(:'la', :ea);
INSERT INTO ln_d VALUES (1, NULL);
ROLLBACK;
BEGIN;
SELECT lease_use(:'la', :ea);
INSERT INTO ln_m VALUES (1, NULL);
ROLLBACK;
-- the newest declaration of one name does not replace another's
BEGIN;
SELECT lease_use(:'la', :ea), lease_use(:'lb', :eb), lease_use(:'la', :ea);
INSERT INTO ln_b VALUES (2, NULL);
INSERT INTO ln_a VALUES (2, NULL);
COMMIT;

-- the fence's kept rows and locks: every long lease in one transaction,
-- in two orders, each table judged by (and stamped with) its own lease
BEGIN;
SELECT lease_use(:'la', :ea), lease_use(:'lb', :eb), lease_use(:'lc', :ec),
       lease_use(:'ld', :ed), lease_use(:'lm', :em);
INSERT INTO ln_a VALUES (3, NULL);
INSERT INTO ln_b VALUES (3, NULL);
INSERT INTO ln_c VALUES (3, NULL);
INSERT INTO ln_d VALUES (3, NULL);
INSERT INTO ln_m VALUES (3, NULL);
INSERT INTO ln_a VALUES (4, NULL);
COMMIT;
BEGIN;
SELECT lease_use(:'lm', :em), lease_use(:'ld', :ed), lease_use(:'lc', :ec),
       lease_use(:'lb', :eb), lease_use(:'la', :ea);
INSERT INTO ln_m VALUES (5, NULL);
INSERT INTO ln_d VALUES (5, NULL);
INSERT INTO ln_c VALUES (5, NULL);
INSERT INTO ln_b VALUES (5, NULL);
INSERT INTO ln_a VALUES (5, NULL);
COMMIT;
-- through a pg_lease.epoch list, and the rows' own epoch columns
BEGIN;
SELECT set_config('pg_lease.epoch', format('%s,%s,%s', :ed, :eb, :ea), true) IS NOT NULL AS set;
INSERT INTO ln_a VALUES (6, NULL);
INSERT INTO ln_d VALUES (6, NULL);
INSERT INTO ln_b VALUES (6, NULL);
COMMIT;
BEGIN;
INSERT INTO ln_b VALUES (7, :eb);
INSERT INTO ln_a VALUES (7, :ea);
INSERT INTO ln_a VALUES (8, :eb);
ROLLBACK;
-- a row's epoch column naming the neighbour's epoch, after that neighbour's
-- table was written (its row kept) in the same transaction
BEGIN;
INSERT INTO ln_a VALUES (9, :ea);
INSERT INTO ln_d VALUES (9, :ea);
ROLLBACK;
BEGIN;
INSERT INTO ln_d VALUES (10, :ed);
INSERT INTO ln_a VALUES (10, :ed);
ROLLBACK;

-- lb changes holder: its old token is stale, also right after la's table
-- (kept row of a name sharing 254 bytes) was written
SELECT lease_revoke(:'lb');
SELECT acquired FROM lease_acquire(:'lb', 'holder-b2', '5min');
SELECT epoch AS eb2 FROM leases WHERE name = :'lb' \gset
BEGIN;
SELECT lease_use(:'la', :ea), lease_use(:'lb', :eb);
INSERT INTO ln_a VALUES (11, NULL);
INSERT INTO ln_b VALUES (11, NULL);
ROLLBACK;
BEGIN;
SELECT lease_use(:'la', :ea), lease_use(:'lb', :eb2);
INSERT INTO ln_a VALUES (12, NULL);
INSERT INTO ln_b VALUES (12, NULL);
COMMIT;
-- and la's lease, revoked, refuses la's table while lb's passes
SELECT lease_revoke(:'la');
BEGIN;
SELECT lease_use(:'lb', :eb2), lease_use(:'la', :ea);
INSERT INTO ln_b VALUES (13, NULL);
INSERT INTO ln_a VALUES (13, NULL);
ROLLBACK;

-- what committed, per table: every row stamped with its own lease's epoch
SELECT 'a' AS t, id, epoch = :ea AS own FROM ln_a
UNION ALL SELECT 'b', id, epoch IN (:eb, :eb2) FROM ln_b
UNION ALL SELECT 'c', id, epoch = :ec FROM ln_c
UNION ALL SELECT 'd', id, epoch = :ed FROM ln_d
UNION ALL SELECT 'm', id, epoch = :em FROM ln_m ORDER BY 1, 2;

-- the history names each lease whole
SELECT CASE name WHEN :'la' THEN 'la' WHEN :'lb' THEN 'lb' WHEN :'lc' THEN 'lc'
                 WHEN :'ld' THEN 'ld' WHEN :'lm' THEN 'lm' END AS lease,
       event, holder
  FROM lease_events WHERE name LIKE repeat('p', 200) || '%' ORDER BY id;

-- a lease group with a long name: shard names of 255 bytes that share
-- 254 bytes are two shards
SELECT 'pglease:group/' || repeat('g', 100) || '/shard/' || repeat('s', 133) || 'x' AS sx,
       'pglease:group/' || repeat('g', 100) || '/shard/' || repeat('s', 133) || 'y' AS sy,
       'pglease:group/' || repeat('g', 100) || '/member/1/' || repeat('w', 130) || 'x' AS mx,
       'pglease:group/' || repeat('g', 100) || '/member/1/' || repeat('w', 130) || 'y' AS my \gset
SELECT octet_length(:'sx') AS sx, octet_length(:'mx') AS mx;
SELECT acquired FROM lease_acquire(:'mx', repeat('w', 130) || 'x', '5min');
SELECT acquired FROM lease_acquire(:'my', repeat('w', 130) || 'y', '5min');
SELECT acquired FROM lease_acquire(:'sx', repeat('w', 130) || 'x', '5min');
SELECT acquired FROM lease_acquire(:'sy', repeat('w', 130) || 'y', '5min');
SELECT octet_length(group_name) AS group_bytes, right(shard, 3) AS shard_end,
       right(holder, 3) AS holder_end, valid
  FROM lease_group_shards WHERE group_name = repeat('g', 100) ORDER BY shard;
SELECT right(member, 3) AS member_end, valid, shards
  FROM lease_group_members WHERE group_name = repeat('g', 100) ORDER BY member;

DROP TABLE ln_a, ln_b, ln_c, ln_d, ln_m;
