// etcdpeer: etcd as its users run it, through its own Go client (clientv3,
// gRPC, one connection per client) and its concurrency package.
//
//	etcdpeer elect -endpoint H:P -name N -id ID -ttl 2s [-pg CONNINFO -table T [-guard] [-pause-at N]]
//	    concurrency.NewSession (lease ttl, kept alive over the client's
//	    KeepAlive stream) + NewElection(...).Campaign; prints LEADER when
//	    elected, writes into T while the session lives; "resign" on stdin
//	    calls Resign. With -guard each write is first checked in etcd by a
//	    Txn comparing the leader key's create revision, as etcd's
//	    documentation suggests; the write itself still goes to PostgreSQL.
//	    With -fence the work goes into etcd instead, each write a Txn that
//	    puts it only if the leader key still has our create revision: etcd's
//	    own fence, for writes into etcd. LOST when the session's Done
//	    channel closes (no keepalive answer within the ttl); -rejoin: then a
//	    new session and a new Campaign in the same process.
//	etcdpeer audit -name N
//	    the -fence writes of election N in etcd's commit order (revision)
//	etcdpeer ops -op txn|grant-revoke|claim-delete|keepalive|keepalive-once -clients N -seconds S [-window 100]
//	    keepalive: -window leases renewed per round trip, pipelined on one
//	    LeaseKeepAlive stream (all requests sent, then all answers read)
//	etcdpeer many -leases 1000 -ttl 30s -hold 300s [-per-lease 1000]
//	    grants the leases, keeps them alive with KeepAlive (one stream for
//	    all of this process's leases) until "resign", and reports how many
//	    of them etcd itself no longer holds (TimeToLive, key counts).
//	    -per-lease K: leases/K leases with K keys on each, the way etcd
//	    users hold many things (a session's lease and its keys).
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"peers/common"
)

func connect(f *common.Flags) *clientv3.Client {
	return connectWithin(f, 5*time.Second)
}

// connectWithin: clientv3 also gives up on a lease whose first keepalive
// answer takes longer than the dial timeout + 1 s (its only knob for it).
func connectWithin(f *common.Flags, dial time.Duration) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{f.Endpoint},
		DialTimeout: dial,
	})
	if err != nil {
		common.Die("etcd", err)
	}
	return cli
}

func elect(f *common.Flags) {
	cli := connect(f)
	defer cli.Close()
	resign := common.Resign()
	// A session whose lease expired is over (its Done channel is closed for
	// good): with -rejoin the process makes a new one and campaigns again,
	// as an etcd user must; the client's connection itself is kept.
	for term(f, cli, resign) && f.Rejoin {
	}
}

// newSession is concurrency.NewSession with its Grant bounded (5 s a try,
// retried at the retry period for 120 s): a Grant sent into a dead link
// would otherwise wait for as long as the connection stays open.
func newSession(f *common.Flags, cli *clientv3.Client) *concurrency.Session {
	until := time.Now().Add(120 * time.Second)
	for {
		c, cc := context.WithTimeout(context.Background(), 5*time.Second)
		g, err := cli.Grant(c, int64(f.TTL/time.Second))
		cc()
		if err == nil {
			s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(f.TTL/time.Second)), concurrency.WithLease(g.ID))
			if err == nil {
				return s
			}
		}
		if time.Now().After(until) {
			common.Die("session", err)
		}
		time.Sleep(f.Retry)
	}
}

// term: one session, one campaign, one term; true when it ended because
// the client saw its session's lease expire (LOST).
func term(f *common.Flags, cli *clientv3.Client, resign <-chan struct{}) bool {
	// The session's lease has the ttl (whole seconds in etcd); the client
	// keeps it alive over its KeepAlive stream at ttl/3, and closes the
	// session's Done channel when no keepalive answer came within the ttl.
	sess := newSession(f, cli)
	e := concurrency.NewElection(sess, "/peers/"+f.Name)
	common.Say("CAMPAIGN", common.NowUs())
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := e.Campaign(ctx, f.ID); err != nil {
		common.Die("campaign", err)
	}
	common.Say("LEADER", common.NowUs(), e.Rev())

	if f.Table != "" {
		write := common.PGWriter(f, e.Rev())
		if f.Fence {
			// etcd's fence: the put happens only while the leader key is the
			// one we created. The revision of the put orders the writes.
			write = func(seq int) error {
				c, cc := context.WithTimeout(context.Background(), time.Second)
				defer cc()
				r, err := cli.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())).
					Then(clientv3.OpPut(fmt.Sprintf("/peers-work/%s/%s-%d", f.Name, f.ID, seq), f.ID)).Commit()
				if err != nil {
					return err
				}
				if !r.Succeeded {
					return common.ErrFenced
				}
				return nil
			}
		}
		leading := func() bool {
			select {
			case <-sess.Done(): // the client saw its lease expire
				return false
			case <-resign:
				return false
			default:
				return true
			}
		}
		var guard func() bool
		if f.Guard {
			// The leader key still exists with the revision we created:
			// checked at etcd, a moment before the write reaches PostgreSQL.
			guard = func() bool {
				c, cc := context.WithTimeout(context.Background(), time.Second)
				defer cc()
				r, err := cli.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())).Commit()
				return err == nil && r.Succeeded
			}
		}
		common.Loop(f, leading, guard, write)
	}
	select {
	case <-resign:
	case <-sess.Done():
		common.Say("LOST", common.NowUs(), "session_done")
		return true
	case <-time.After(120 * time.Second):
	}
	c, cc := context.WithTimeout(context.Background(), 5*time.Second)
	defer cc()
	if err := e.Resign(c); err != nil {
		common.Die("resign", err)
	}
	common.Say("RESIGNED", common.NowUs())
	sess.Close()
	return false
}

// audit: the -fence writes of one election in etcd's commit order.
func audit(f *common.Flags) {
	cli := connect(f)
	defer cli.Close()
	c, cc := context.WithTimeout(context.Background(), 10*time.Second)
	defer cc()
	r, err := cli.Get(c, "/peers-work/"+f.Name+"/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend))
	if err != nil {
		common.Die("audit", err)
	}
	var writers []string
	for _, kv := range r.Kvs {
		writers = append(writers, string(kv.Value))
	}
	common.Audit(writers)
}

func main() {
	f := common.Parse()
	switch strings.ToLower(f.Mode) {
	case "elect":
		elect(f)
	case "ops":
		ops(f)
	case "many":
		many(f)
	case "audit":
		audit(f)
	default:
		fmt.Fprintln(os.Stderr, "etcdpeer: unknown mode", f.Mode)
		os.Exit(2)
	}
}
