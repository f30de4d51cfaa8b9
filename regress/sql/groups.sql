-- groups: the lease group views take group lease names apart (1.2)
\set VERBOSITY sqlstate
SELECT extversion FROM pg_extension WHERE extname = 'pg_lease';

-- group "orders": two members, three shards (one free, one expired)
SELECT acquired FROM lease_acquire('pglease:group/orders/member/1/worker-a', 'worker-a', '30s');
SELECT acquired FROM lease_acquire('pglease:group/orders/member/3/worker-b', 'worker-b', '30s');
SELECT acquired FROM lease_acquire('pglease:group/orders/shard/orders/0', 'worker-a', '30s');
SELECT acquired FROM lease_acquire('pglease:group/orders/shard/orders/1', 'worker-b', '30s');
SELECT acquired FROM lease_acquire('pglease:group/orders/shard/orders/2', 'worker-b', '30s');
SELECT acquired FROM lease_acquire('pglease:group/orders/shard/orders/3', 'worker-a', '100ms');
SELECT acquired, epoch AS e4 FROM lease_acquire('pglease:group/orders/shard/orders/4', 'worker-a', '30s') \gset
SELECT lease_release('pglease:group/orders/shard/orders/4', 'worker-a', :e4);
SELECT pg_sleep(0.2);
-- a group whose name holds a slash, a percent sign and quotes, escaped
SELECT acquired FROM lease_acquire('pglease:group/a%2Fb%25c''"d/member/1000/x/y', 'x/y', '30s');
SELECT acquired FROM lease_acquire('pglease:group/a%2Fb%25c''"d/shard/s/member/1/z', 'x/y', '30s');
-- not group leases: no prefix, bad escape, unknown kind, bad weight, empty parts
SELECT acquired FROM lease_acquire('orders/0', 'worker-a', '30s');
SELECT acquired FROM lease_acquire('pglease:group/bad%2/shard/0', 'q', '30s');
SELECT acquired FROM lease_acquire('pglease:group/g/other/0', 'q', '30s');
SELECT acquired FROM lease_acquire('pglease:group/g/member/0/q', 'q', '30s');
SELECT acquired FROM lease_acquire('pglease:group/g/member/1001/q', 'q', '30s');
SELECT acquired FROM lease_acquire('pglease:group/g/member/1/', 'q', '30s');
SELECT acquired FROM lease_acquire('pglease:group/g/shard/', 'q', '30s');
SELECT acquired FROM lease_acquire('pglease:group//shard/0', 'q', '30s');

SELECT group_name, kind, member, weight, shard, holder, valid FROM lease_group_leases
 ORDER BY group_name, kind, lease_name;
SELECT group_name, member, weight, valid, shards, remaining > '0' AS has_time FROM lease_group_members
 ORDER BY group_name, member;
SELECT group_name, shard, holder, valid, epoch > 0 AS has_epoch FROM lease_group_shards
 ORDER BY group_name, shard;
-- a member that is not the holder of its own membership lease is not valid
SELECT acquired FROM lease_acquire('pglease:group/orders/member/1/worker-c', 'impostor', '30s');
SELECT member, valid, shards FROM lease_group_members WHERE member = 'worker-c';
-- everyone may read them, no one may write them
CREATE ROLE groups_reader; GRANT groups_reader TO CURRENT_USER;
SET ROLE groups_reader;
SELECT count(*) FROM lease_group_members WHERE group_name = 'orders';
DELETE FROM lease_group_shards;
RESET ROLE;
DROP ROLE groups_reader;
