// pg_lease with pgx: acquire, renew in a goroutine, fenced writes, a stale write refused with its SQLSTATE.
// Run (Debian golang-github-jackc-pgx-v4-dev, offline): GO111MODULE=off GOPATH=/usr/share/gocode go run fence.go
// Elsewhere: go mod tidy && go run . (go.mod names pgx v4). Connects with the PG* variables.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

const lease, ttl, margin = "scheduler", 3 * time.Second, 500 * time.Millisecond
const upsert = "INSERT INTO jobs VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET state = $1"
const acquire = `SELECT set_config('pg_lease.epoch', epoch::text, false)::bigint -- the session's token from now on
	FROM lease_acquire($1, $2, $3) WHERE acquired`

// renew renews every ttl/3 until a renew returns NULL or fails past the local deadline; then it closes lost.
func renew(ctx context.Context, conn *pgx.Conn, holder string, epoch int64, deadline time.Time, lost chan<- struct{}) {
	defer close(lost)
	for range time.Tick(ttl / 3) {
		sent, until := time.Now(), (*time.Time)(nil) // time.Now carries a monotonic clock reading
		switch err := conn.QueryRow(ctx, "SELECT lease_renew($1, $2, $3)", lease, holder, epoch).Scan(&until); {
		case err == nil && until == nil:
			fmt.Printf("%s lost the lease: renew returned NULL; stopping\n", holder)
			return
		case err != nil && time.Now().After(deadline):
			fmt.Printf("%s renew failed past the deadline: %v; stopping\n", holder, err)
			return
		case err == nil:
			deadline = sent.Add(ttl - margin)
			fmt.Printf("%s renewed until %s\n", holder, until.Format(time.RFC3339Nano))
		}
	}
}

func must(what string, err error) {
	if err != nil {
		log.Fatalf("%s: %v", what, err)
	}
}

func main() {
	ctx, conns := context.Background(), [3]*pgx.Conn{} // worker-a, worker-b (and operator), worker-a's renewer
	for i := range conns {
		var err error
		conns[i], err = pgx.Connect(ctx, "") // host, port, user, database from the PG* variables
		must("connect", err)
		defer conns[i].Close(ctx)
	}
	a, b, renewer := conns[0], conns[1], conns[2]
	exec := func(c *pgx.Conn, sql string, args ...interface{}) error {
		_, err := c.Exec(ctx, sql, args...)
		return err
	}
	must("set up jobs", exec(a, "CREATE EXTENSION IF NOT EXISTS pg_lease; CREATE TABLE IF NOT EXISTS jobs"+
		" (id int PRIMARY KEY, state text, epoch bigint); SELECT lease_fence('jobs', 'scheduler')"))
	sent, lost, epochA, epochB := time.Now(), make(chan struct{}), int64(0), int64(0)
	must("acquire for worker-a", a.QueryRow(ctx, acquire, lease, "worker-a", ttl).Scan(&epochA))
	fmt.Printf("worker-a acquired epoch %d\n", epochA) // a's session carries it, as PGOPTIONS='-c pg_lease.epoch=N'
	go renew(ctx, renewer, "worker-a", epochA, sent.Add(ttl-margin), lost)
	time.Sleep(ttl / 2)
	must("worker-a write", exec(a, upsert, "started by worker-a"))
	fmt.Printf("worker-a wrote job 1 with epoch %d\n", epochA)
	// An operator revokes the lease and worker-b takes over, before worker-a's next renew notices.
	must("revoke", exec(b, "SELECT lease_revoke($1)", lease))
	must("acquire for worker-b", b.QueryRow(ctx, acquire, lease, "worker-b", ttl).Scan(&epochB))
	fmt.Printf("worker-b acquired epoch %d\n", epochB)
	var pgErr *pgconn.PgError
	if err := exec(a, upsert, "stale write by worker-a"); errors.As(err, &pgErr) {
		fmt.Printf("worker-a stale write refused: SQLSTATE %s (%s)\n", pgErr.Code, pgErr.Message)
	}
	<-lost // worker-a's renewer notices within ttl/3: worker-a stops working
	must("release", exec(b, "SELECT lease_release($1, 'worker-b', $2)", lease, epochB))
}
