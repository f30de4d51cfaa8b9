-- bad input: every 22023 and 22004 case, and names that are odd but fine
\set VERBOSITY sqlstate
SELECT setval('lease_epoch_seq', 5000);

-- NULLs where a value is required: 22004
SELECT * FROM lease_acquire(NULL, 'h', '1s');
SELECT * FROM lease_acquire('n', NULL, '1s');
SELECT * FROM lease_acquire('n', 'h', NULL);
SELECT lease_renew(NULL, 'h', 1);
SELECT lease_renew('n', NULL, 1);
SELECT lease_renew('n', 'h', NULL);
SELECT lease_release(NULL, 'h', 1);
SELECT lease_release('n', NULL, 1);
SELECT lease_release('n', 'h', NULL);
SELECT lease_revoke(NULL);
SELECT lease_use(NULL, 1);
SELECT lease_use('n', NULL);
SELECT lease_fence(NULL, 'n');
SELECT lease_fence('pg_class', NULL);
SELECT lease_fence('pg_class', 'n', NULL);
SELECT lease_unfence(NULL);

-- empty and oversized names and holders: 22023
SELECT * FROM lease_acquire('', 'h', '1s');
SELECT * FROM lease_acquire('n', '', '1s');
SELECT * FROM lease_acquire(repeat('x', 256), 'h', '1s');
SELECT * FROM lease_acquire('n', repeat('x', 256), '1s');
SELECT lease_renew('', 'h', 1);
SELECT lease_renew('n', repeat('x', 256), 1);
SELECT lease_release('', 'h', 1);
SELECT lease_revoke(repeat('x', 256));
SELECT lease_use('', 1);
SELECT lease_fence('pg_class', '');
SELECT lease_fence('pg_class', repeat('x', 256));
-- the limit is in bytes: 85 three-byte characters fit, 86 do not
SELECT octet_length(repeat('€', 85)) AS fits, octet_length(repeat('€', 86)) AS too_long;
SELECT acquired FROM lease_acquire(repeat('€', 85), 'h', '1s');
SELECT * FROM lease_acquire(repeat('€', 86), 'h', '1s');
SELECT acquired FROM lease_acquire(repeat('x', 255), repeat('y', 255), '1s');
-- text cannot hold a NUL at all
SELECT * FROM lease_acquire('a' || chr(0), 'h', '1s');

-- ttl must be positive and at most pg_lease.max_ttl (default 1 day): 22023
SELECT * FROM lease_acquire('n', 'h', '0s');
SELECT * FROM lease_acquire('n', 'h', '-1s');
SELECT * FROM lease_acquire('n', 'h', '1 day 1 second');
SELECT * FROM lease_acquire('n', 'h', '1 month');
SELECT * FROM lease_acquire('n', 'h', '1000000 years');
SELECT acquired FROM lease_acquire('n', 'h', '1 day');
SELECT acquired FROM lease_acquire('n', 'h', '1 day -23 hours');
SELECT lease_renew('n', 'h', (SELECT epoch FROM leases WHERE name = 'n'), '0s');
SELECT lease_renew('n', 'h', (SELECT epoch FROM leases WHERE name = 'n'), '2 days');
SHOW pg_lease.max_ttl;
SET pg_lease.max_ttl = '10s';
SHOW pg_lease.max_ttl;
SELECT acquired FROM lease_acquire('n2', 'h', '11s');
SELECT acquired FROM lease_acquire('n2', 'h', '10s');
RESET pg_lease.max_ttl;
SET pg_lease.max_ttl = 0;
RESET pg_lease.max_ttl;
-- unknown settings under the reserved prefix: reserved_prefix.sql

-- epochs: lease_use wants a positive one; pg_lease.epoch a list of them
SELECT lease_use('n', 0);
SELECT lease_use('n', -5);
SET pg_lease.epoch = 'abc';
SET pg_lease.epoch = '1,,2';
SET pg_lease.epoch = '1;2';
SET pg_lease.epoch = '-1';
SET pg_lease.epoch = '0';
SET pg_lease.epoch = '99999999999999999999';
SET pg_lease.epoch = '1,';
SET pg_lease.epoch = ' 1 , 2 ';
SHOW pg_lease.epoch;
SET pg_lease.epoch = '';
RESET pg_lease.epoch;

-- failed calls wrote nothing
SELECT count(*) FROM leases WHERE name = '' OR octet_length(name) > 255 OR holder = '' OR octet_length(holder) > 255;

-- names full of quotes, backslashes, spaces, unicode and SQL work as plain data
SELECT acquired, holder FROM lease_acquire($$it's "quoted"$$, $$o'brien\$$, '10s');
SELECT acquired, holder FROM lease_acquire('x''); DROP TABLE leases; --', 'h', '10s');
SELECT acquired, holder FROM lease_acquire('ключ 🔑', 'держатель', '10s');
SELECT name, holder FROM leases WHERE name IN ($$it's "quoted"$$, 'x''); DROP TABLE leases; --', 'ключ 🔑') ORDER BY name;
SELECT lease_renew($$it's "quoted"$$, $$o'brien\$$, (SELECT epoch FROM leases WHERE name = $$it's "quoted"$$)) IS NOT NULL AS renewed;
CREATE TABLE quoted_fence ("ep""och" bigint);
SELECT lease_fence('quoted_fence', $$it's "quoted"$$, 'ep"och');
BEGIN;
SELECT lease_use($$it's "quoted"$$, (SELECT epoch FROM leases WHERE name = $$it's "quoted"$$));
INSERT INTO quoted_fence VALUES (NULL);
COMMIT;
SELECT count(*) FROM quoted_fence WHERE "ep""och" IS NOT NULL;
INSERT INTO quoted_fence VALUES (NULL);
DROP TABLE quoted_fence;
