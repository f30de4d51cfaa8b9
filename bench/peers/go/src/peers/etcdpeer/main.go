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
//	etcdpeer ops -op txn|grant-revoke|claim-delete|keepalive|keepalive-once -clients N -seconds S
//	etcdpeer many -leases 1000 -ttl 30s -hold 40s
//	    grants the leases, keeps them alive with KeepAlive (one stream for
//	    all of this process's leases), reports how many were lost.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	pb "go.etcd.io/etcd/etcdserver/etcdserverpb"
	"peers/common"
)

func connect(f *common.Flags) *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{f.Endpoint},
		DialTimeout: 5 * time.Second,
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
	// The session's lease has the ttl (whole seconds in etcd); the client
	// keeps it alive over its KeepAlive stream at ttl/3.
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(f.TTL/time.Second)))
	if err != nil {
		common.Die("session", err)
	}
	e := concurrency.NewElection(sess, "/peers/"+f.Name)
	common.Say("CAMPAIGN", common.NowUs())
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := e.Campaign(ctx, f.ID); err != nil {
		common.Die("campaign", err)
	}
	common.Say("LEADER", common.NowUs(), e.Rev())

	if f.Table != "" {
		w := common.NewWriter(f)
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
		w.Loop(leading, guard, e.Rev())
	}
	select {
	case <-resign:
	case <-sess.Done():
		common.Say("LOST", common.NowUs())
		return
	case <-time.After(120 * time.Second):
	}
	c, cc := context.WithTimeout(context.Background(), 5*time.Second)
	defer cc()
	if err := e.Resign(c); err != nil {
		common.Die("resign", err)
	}
	common.Say("RESIGNED", common.NowUs())
	sess.Close()
}

// ops: each client its own clientv3.Client (its own gRPC connection).
func ops(f *common.Flags) {
	var clients []*clientv3.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	ttl := int64(f.TTL / time.Second)
	if ttl < 1 {
		ttl = 1
	}
	common.Ops(f, func(i int) func() bool {
		cli := connect(f)
		clients = append(clients, cli)
		ctx := context.Background()
		key := fmt.Sprintf("/peers/ops/%s/%d", f.ID, i)
		switch f.Op {
		case "txn":
			// Durable compare-and-swap on the leader key: renew-equivalent.
			r, err := cli.Put(ctx, key, "0")
			if err != nil {
				common.Die("put", err)
			}
			rev := r.Header.Revision
			n := 0
			return func() bool {
				n++
				r, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
					Then(clientv3.OpPut(key, fmt.Sprint(n))).Commit()
				if err != nil || !r.Succeeded {
					return false
				}
				rev = r.Header.Revision
				return true
			}
		case "grant-revoke":
			// A lease granted and revoked: both go through raft.
			return func() bool {
				g, err := cli.Grant(ctx, ttl)
				if err != nil {
					return false
				}
				_, err = cli.Revoke(ctx, g.ID)
				return err == nil
			}
		case "claim-delete":
			// What Campaign + Resign write, without the wait: the key
			// created under a lease if absent, then deleted if ours.
			g, err := cli.Grant(ctx, 60)
			if err != nil {
				common.Die("grant", err)
			}
			return func() bool {
				r, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
					Then(clientv3.OpPut(key, f.ID, clientv3.WithLease(g.ID))).Commit()
				if err != nil || !r.Succeeded {
					return false
				}
				rev := r.Header.Revision
				d, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
					Then(clientv3.OpDelete(key)).Commit()
				return err == nil && d.Succeeded
			}
		case "keepalive":
			// One keepalive request and its answer at a time over the
			// LeaseKeepAlive stream that clientv3's KeepAlive uses; etcd
			// keeps the expiry in the leader's memory (not persisted).
			g, err := cli.Grant(ctx, 60)
			if err != nil {
				common.Die("grant", err)
			}
			stream, err := pb.NewLeaseClient(cli.ActiveConnection()).LeaseKeepAlive(ctx)
			if err != nil {
				common.Die("stream", err)
			}
			return func() bool {
				if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(g.ID)}); err != nil {
					return false
				}
				r, err := stream.Recv()
				return err == nil && r.TTL > 0
			}
		case "keepalive-once":
			g, err := cli.Grant(ctx, 60)
			if err != nil {
				common.Die("grant", err)
			}
			return func() bool {
				r, err := cli.KeepAliveOnce(ctx, g.ID)
				return err == nil && r.TTL > 0
			}
		}
		common.Die("ops", fmt.Errorf("unknown op %q", f.Op))
		return nil
	})
}

// many: f.Leases leases granted by this process, each kept alive by the
// client's KeepAlive from its grant on (clientv3 multiplexes them all over
// one stream).
func many(f *common.Flags) {
	cli := connect(f)
	defer cli.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ttl := int64(f.TTL / time.Second)
	start := time.Now()
	ids := make([]clientv3.LeaseID, 0, f.Leases)
	var lost, answers int64
	var wg sync.WaitGroup
	for i := 0; i < f.Leases; i++ {
		c, cc := context.WithTimeout(ctx, 10*time.Second)
		g, err := cli.Grant(c, ttl)
		cc()
		if err != nil {
			common.Die("grant", err)
		}
		ids = append(ids, g.ID)
		ch, err := cli.KeepAlive(ctx, g.ID)
		if err != nil {
			common.Die("keepalive", err)
		}
		wg.Add(1)
		go func(ch <-chan *clientv3.LeaseKeepAliveResponse) {
			defer wg.Done()
			for range ch {
				atomic.AddInt64(&answers, 1)
			}
			if ctx.Err() == nil { // closed before we stopped: lease lost
				atomic.AddInt64(&lost, 1)
			}
		}(ch)
	}
	common.Say("GRANTED", len(ids), fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	time.Sleep(f.Hold)
	// Each lease still has time left at etcd (checked for every lease).
	expired := 0
	for _, id := range ids {
		c, cc := context.WithTimeout(ctx, 10*time.Second)
		r, err := cli.TimeToLive(c, id)
		cc()
		if err != nil || r.TTL <= 0 {
			expired++
		}
	}
	common.Say("HELD", len(ids), "lost", atomic.LoadInt64(&lost), "expired", expired, "keepalive_answers", atomic.LoadInt64(&answers))
	cancel()
	wg.Wait()
	// Revoke them so the next system starts from a quiet etcd.
	for _, id := range ids {
		c, cc := context.WithTimeout(context.Background(), 10*time.Second)
		cli.Revoke(c, id)
		cc()
	}
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
	default:
		fmt.Fprintln(os.Stderr, "etcdpeer: unknown mode", f.Mode)
		os.Exit(2)
	}
}
