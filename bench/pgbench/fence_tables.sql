-- Shared by bench/pgbench/fence_cost.sh and bench/pgbench/fence_callgrind.sh: the extension,
-- lease 'f' held for a day, a table it fences and an unfenced twin.
SET client_min_messages = warning;
CREATE EXTENSION pg_lease;
SELECT lease_acquire('f', 'writer', '1 day');
CREATE TABLE fenced (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text, epoch bigint);
CREATE TABLE unfenced (LIKE fenced INCLUDING ALL);
SELECT lease_fence('fenced', 'f');
