-- messages: lower case, naming the lease, the token and the current epoch
\set VERBOSITY default
\set SHOW_CONTEXT never
\set tl1 140737488355328
SELECT setval('lease_epoch_seq', 8000);

CREATE TABLE msg (id int, epoch bigint);
SELECT lease_fence('msg', 'msg-lease');
SELECT acquired FROM lease_acquire('msg-lease', 'a', '30s');
SELECT lease_release('msg-lease', 'a', :tl1 + 8001);
SELECT acquired FROM lease_acquire('msg-lease', 'b', '30s');
-- LS001: stale
INSERT INTO msg VALUES (1, :tl1 + 8001);
-- LS001: never granted
INSERT INTO msg VALUES (1, :tl1 + 8100);
-- LS003: no token
INSERT INTO msg VALUES (1, NULL);
-- LS002: released or revoked
SELECT lease_revoke('msg-lease');
INSERT INTO msg VALUES (1, :tl1 + 8002);
-- LS002: expired
SELECT acquired FROM lease_acquire('msg-lease', 'c', '10ms');
SELECT pg_sleep(0.1);
DO $$
BEGIN
	INSERT INTO msg VALUES (1, 140737488363331);
EXCEPTION WHEN SQLSTATE 'LS002' THEN
	RAISE NOTICE 'LS002: %', regexp_replace(SQLERRM, '\d{4}-.*', '<time>');
END
$$;
-- LS002: no such lease
SELECT lease_fence('msg', 'no-such-lease');
INSERT INTO msg VALUES (1, 5);
-- argument errors
SELECT * FROM lease_acquire('', 'h', '1s');
SELECT * FROM lease_acquire('n', repeat('h', 300), '1s');
SELECT * FROM lease_acquire('n', 'h', '0s');
SELECT * FROM lease_acquire('n', 'h', '2 days');
SELECT * FROM lease_acquire('n', 'h', '1s', '-1s');
SELECT * FROM lease_acquire('n', 'h', '1s', '2 days');
SELECT * FROM lease_acquire('n', NULL, '1s');
SET pg_lease.epoch = 'x';
CREATE TABLE msg_int (epoch int);
SELECT lease_fence('msg_int', 'n');
DROP TABLE msg, msg_int;
