// pg_lease with node-postgres: acquire, renew on a timer loop, fenced writes, a stale write refused.
// Run: node examples/node/fence.js   (Debian: node-pg, or npm install pg; connects with PG* variables)
// Needs pg_lease installed in the server; the role creates the extension if missing and calls lease_revoke.
'use strict';
const { Client } = require('pg');
const { setTimeout: sleep } = require('node:timers/promises');
const LEASE = 'scheduler', TTL_MS = 3000, MARGIN_MS = 500; // renew every TTL/3, give up MARGIN before expiry
const lost = (why) => { console.log(why); return 'lost'; };

// host, port, user, database and password from the PG* variables
const connect = async () => { const client = new Client(); await client.connect(); return client; };

// Renews on its own connection until `signal` aborts; resolves to 'lost' on NULL or past the local deadline.
async function renewer(holder, epoch, deadline, signal) {
  const client = await connect();
  try {
    for (;;) {
      try { await sleep(TTL_MS / 3, null, { signal }); } catch { return 'stopped'; }
      const sent = performance.now();
      try {
        const { rows } = await client.query('SELECT lease_renew($1, $2, $3) AS until', [LEASE, holder, epoch]);
        if (rows[0].until === null) return lost(`${holder} lost the lease: renew returned NULL; stopping`);
        deadline = sent + TTL_MS - MARGIN_MS;
        console.log(`${holder} renewed until ${rows[0].until.toISOString()}`);
      } catch (err) {
        if (performance.now() >= deadline) return lost(`${holder} renew failed past the deadline: ${err.message}`);
      }
    }
  } finally {
    await client.end();
  }
}

// One fenced write: lease_use declares the token inside the write's own transaction.
async function writeJob(client, epoch, state) {
  await client.query('BEGIN');
  try {
    await client.query('SELECT lease_use($1, $2)', [LEASE, epoch]);
    await client.query(`INSERT INTO jobs VALUES (1, $1)
                        ON CONFLICT (id) DO UPDATE SET state = excluded.state`, [state]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

async function main() {
  const [a, b] = await Promise.all([connect(), connect()]);
  try {
    await a.query(`CREATE EXTENSION IF NOT EXISTS pg_lease;
                   CREATE TABLE IF NOT EXISTS jobs (id int PRIMARY KEY, state text, epoch bigint)`);
    await a.query("SELECT lease_fence('jobs', $1)", [LEASE]);
    const sent = performance.now();
    const { rows: [grant] } = await a.query("SELECT * FROM lease_acquire($1, 'worker-a', $2)", [LEASE, `${TTL_MS}ms`]);
    if (!grant.acquired) throw new Error(`${LEASE} is held by ${grant.holder}`);
    console.log(`worker-a acquired epoch ${grant.epoch}`); // bigint arrives as a string: pass it back as is
    const stop = new AbortController();
    const renewing = renewer('worker-a', grant.epoch, sent + TTL_MS - MARGIN_MS, stop.signal);
    await sleep(TTL_MS / 2);
    await writeJob(a, grant.epoch, 'started by worker-a');
    console.log(`worker-a wrote job 1 with epoch ${grant.epoch}`);
    // An operator revokes the lease and worker-b takes over, before worker-a's next renew notices.
    await b.query('SELECT lease_revoke($1)', [LEASE]);
    const { rows: [next] } = await b.query("SELECT epoch FROM lease_acquire($1, 'worker-b', '30s')", [LEASE]);
    console.log(`worker-b acquired epoch ${next.epoch}`);
    await writeJob(b, next.epoch, 'done by worker-b');
    console.log(`worker-b wrote job 1 with epoch ${next.epoch}`);
    await writeJob(a, grant.epoch, 'stale write by worker-a') // a write that was already under way
      .catch((err) => console.log(`worker-a stale write refused: SQLSTATE ${err.code} (${err.message})`));
    setTimeout(() => stop.abort(), TTL_MS).unref();
    await renewing;
    await b.query("SELECT lease_release($1, 'worker-b', $2)", [LEASE, next.epoch]);
  } finally {
    await Promise.all([a.end(), b.end()]);
  }
}

main().catch((err) => { console.error(err); process.exitCode = 1; });
