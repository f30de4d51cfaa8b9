// Package common holds what the Go peers of bench/peers share: the command
// line every peer program accepts (bench/peers/README.md), the lines they
// print for the driver, the leader's write loop into PostgreSQL, and the
// bounded load loop of the throughput figures.
package common

import (
	"bufio"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	_ "github.com/lib/pq" // database/sql driver "postgres"
)

// Flags: the same for every peer program (etcd, Redis; the Java and C++
// peers accept the same names).
type Flags struct {
	Mode     string        // elect | ops | many
	Endpoint string        // the peer's server: host:port
	PG       string        // libpq connection string of the table the leader writes
	Table    string        // the table the leader writes (elect)
	Name     string        // election / lease name
	ID       string        // this process's identity
	TTL      time.Duration // lease ttl / session timeout
	Retry    time.Duration // retry period where the peer polls
	WriteGap time.Duration // pause between two writes of the leader (elect)
	Guard    bool          // check the peer's own guard before each write (etcd: leader key revision)
	Fence    bool          // write into the peer itself, fenced there (etcd Txn, Redis script); not PostgreSQL
	PauseAt  int           // SIGSTOP itself after the guard of write PauseAt passed, before the write
	Rejoin   bool          // elect: after LOST, campaign again in the same process (a new session / lock loop)
	Op       string        // ops: the operation
	Clients  int           // ops: concurrent clients, each its own connection
	Seconds  float64       // ops: length of the phase
	MaxOps   int           // ops: bound on the operations of one client
	Leases   int           // many: leases held by this process
	Hold     time.Duration // many: bound on the hold; the driver ends it sooner with "resign"
	PerLease int           // many: keys attached to each lease (etcd: many keys on one lease)
	Window   int           // ops keepalive: requests in flight on the stream
}

// Parse reads the command line: MODE then -flags.
func Parse() *Flags {
	f := &Flags{}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: PEER elect|ops|many -flags")
		os.Exit(2)
	}
	f.Mode = os.Args[1]
	fs := flag.NewFlagSet(f.Mode, flag.ExitOnError)
	fs.StringVar(&f.Endpoint, "endpoint", "127.0.0.1:2379", "server host:port")
	fs.StringVar(&f.PG, "pg", "", "libpq connection string for the leader's writes")
	fs.StringVar(&f.Table, "table", "", "table the leader writes")
	fs.StringVar(&f.Name, "name", "peers", "election or lease name")
	fs.StringVar(&f.ID, "id", fmt.Sprintf("p%d", os.Getpid()), "identity")
	fs.DurationVar(&f.TTL, "ttl", 2*time.Second, "lease ttl / session timeout")
	fs.DurationVar(&f.Retry, "retry", 300*time.Millisecond, "retry period")
	fs.DurationVar(&f.WriteGap, "write-gap", 5*time.Millisecond, "pause between writes")
	fs.BoolVar(&f.Guard, "guard", false, "check the peer's guard before each write")
	fs.BoolVar(&f.Fence, "fence", false, "write into the peer, fenced by the peer")
	fs.IntVar(&f.PauseAt, "pause-at", 0, "SIGSTOP self between guard and write number N")
	fs.BoolVar(&f.Rejoin, "rejoin", false, "elect: campaign again after losing")
	fs.StringVar(&f.Op, "op", "", "ops: operation")
	fs.IntVar(&f.Clients, "clients", 1, "ops: clients")
	fs.Float64Var(&f.Seconds, "seconds", 1, "ops: seconds")
	fs.IntVar(&f.MaxOps, "max-ops", 1000000, "ops: bound per client")
	fs.IntVar(&f.Leases, "leases", 1000, "many: leases")
	fs.DurationVar(&f.Hold, "hold", 40*time.Second, "many: bound on the hold time")
	fs.IntVar(&f.PerLease, "per-lease", 1, "many: keys per lease")
	fs.IntVar(&f.Window, "window", 100, "ops keepalive: requests in flight")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	return f
}

var outMu sync.Mutex

// Say prints one line for the driver: WORD then fields, flushed at once.
func Say(word string, fields ...interface{}) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprint(os.Stdout, word)
	for _, x := range fields {
		fmt.Fprint(os.Stdout, " ", x)
	}
	fmt.Fprintln(os.Stdout)
	os.Stdout.Sync()
}

// NowUs is the wall clock in microseconds: the driver compares the times of
// several processes on one machine.
func NowUs() int64 { return time.Now().UnixNano() / 1000 }

// Die prints the error and exits 1.
func Die(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

// Resign returns a channel closed when the driver writes "resign" on stdin
// (or closes stdin).
func Resign() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "resign" {
				break
			}
		}
		close(ch)
	}()
	return ch
}

// PGWriter is the leader's work in PostgreSQL: one INSERT per write into
// the table, as an application that leads would write. The table is
// (writer, seq, token); nothing in PostgreSQL checks the token.
func PGWriter(f *Flags, token int64) func(seq int) error {
	db, err := sql.Open("postgres", f.PG)
	if err != nil {
		Die("postgres", err)
	}
	db.SetMaxOpenConns(1)
	stmt, err := db.Prepare("INSERT INTO " + f.Table + " (writer, seq, token) VALUES ($1, $2, $3)")
	if err != nil {
		Die("prepare", err)
	}
	return func(seq int) error {
		_, err := stmt.Exec(f.ID, seq, token)
		return err
	}
}

// ErrFenced is what a peer's own fence returns for a refused write.
var ErrFenced = fmt.Errorf("fenced")

// Loop writes while leading() says so and guard() (when set) passes; it
// stops itself (SIGSTOP) between the guard and write number PauseAt, the
// worst moment for a pause. It returns when leading() turns false, when the
// guard fails, when a write is refused, or after 60 s (bound). Prints
// STOPPED_WRITING.
func Loop(f *Flags, leading func() bool, guard func() bool, write func(seq int) error) {
	deadline := time.Now().Add(60 * time.Second)
	seq := 0
	for time.Now().Before(deadline) && leading() {
		if guard != nil && !guard() {
			break
		}
		seq++
		if seq == f.PauseAt {
			Say("PAUSING", NowUs())
			stopHere()
		}
		if err := write(seq); err != nil {
			Say("WRITE_REFUSED", NowUs(), err.Error())
			break
		}
		time.Sleep(f.WriteGap)
	}
	Say("STOPPED_WRITING", NowUs(), seq)
}

// Audit prints what the driver counts for a run whose writes went into the
// peer: AUDIT stale old new, where the writers' rows are given in the
// peer's own commit order and stale counts "old" rows after the first
// "new" one.
func Audit(writers []string) {
	stale, old, nw, seenNew := 0, 0, 0, false
	for _, w := range writers {
		switch w {
		case "new":
			nw++
			seenNew = true
		case "old":
			old++
			if seenNew {
				stale++
			}
		}
	}
	Say("AUDIT", stale, old, nw)
}

// Hold waits for "resign" on stdin (the driver's end of the hold) or the
// bound f.Hold, whichever comes first.
func Hold(f *Flags) {
	select {
	case <-Resign():
	case <-time.After(f.Hold):
	}
}

// stopHere stops the whole process before the calling goroutine goes on:
// SIGSTOP sent to this OS thread (a signal sent to the process would stop
// its threads a moment later, after the write went out).
func stopHere() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}

// Ops runs op on Clients goroutines for Seconds (each at most MaxOps times),
// each with its own client made by open, and prints
// OPS op clients count seconds ops_per_s. op returns false on a failed
// operation (counted as an error and fatal: a benchmark that silently fails
// would measure nothing).
func Ops(f *Flags, open func(i int) func() bool) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	counts := make([]int, f.Clients)
	fails := make([]int, f.Clients)
	runs := make([]func() bool, f.Clients)
	for i := range runs {
		runs[i] = open(i)
	}
	per := 1
	if f.Op == "keepalive" {
		per = f.Window // one round trip renews Window leases: counted per lease
	}
	var began time.Time
	for i := 0; i < f.Clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			deadline := began.Add(time.Duration(f.Seconds * float64(time.Second)))
			for counts[i] < f.MaxOps && time.Now().Before(deadline) {
				if !runs[i]() {
					fails[i]++
					if fails[i] > 3 {
						return
					}
					continue
				}
				counts[i] += per
			}
		}(i)
	}
	began = time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began).Seconds()
	total, failed := 0, 0
	for i := range counts {
		total += counts[i]
		failed += fails[i]
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "ops %s: %d failed operations\n", f.Op, failed)
		os.Exit(1)
	}
	Say("OPS", f.Op, f.Clients, total, fmt.Sprintf("%.3f", elapsed), fmt.Sprintf("%.0f", float64(total)/elapsed))
}
