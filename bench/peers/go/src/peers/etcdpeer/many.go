// many.go: etcdpeer's many-leases figure (main.go has the usage).

package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3"
	"peers/common"
)

// many: f.Leases things held by this process: f.Leases leases each kept
// alive by the client's KeepAlive from its grant on (clientv3 multiplexes
// them all over one stream), or with -per-lease K, f.Leases/K leases with K
// keys on each (one keepalive keeps them all). Held until "resign" (or the
// -hold bound); then etcd is asked which are gone.
func many(f *common.Flags) {
	// 100 processes granting 100,000 leases keep etcd's applier busy, and
	// a keepalive is answered only once the applier has caught up: the
	// first answer may take seconds. Given up after 6 s (the default dial
	// timeout + 1 s), every lease was lost in an earlier run; an etcd user
	// holding this many leases allows it the lease's ttl.
	cli := connectWithin(f, f.TTL)
	defer cli.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ttl := int64(f.TTL / time.Second)
	per := f.PerLease
	if per < 1 {
		per = 1
	}
	prefix := fmt.Sprintf("/peers-many/%s/", f.ID)
	start := time.Now()
	ids := make([]clientv3.LeaseID, 0, f.Leases/per)
	var closed, answers int64
	var wg sync.WaitGroup
	for i := 0; i < f.Leases/per; i++ {
		c, cc := context.WithTimeout(ctx, 30*time.Second) // bound: 100 processes granting at once
		g, err := cli.Grant(c, ttl)
		cc()
		if err != nil {
			common.Die("grant", err)
		}
		ids = append(ids, g.ID)
		if per > 1 {
			// The keys on the lease: one Txn of K puts (etcd's default
			// limit is 128 operations a Txn).
			for k := 0; k < per; k += 128 {
				var puts []clientv3.Op
				for j := k; j < per && j < k+128; j++ {
					puts = append(puts, clientv3.OpPut(fmt.Sprintf("%s%d/%d", prefix, i, j), f.ID, clientv3.WithLease(g.ID)))
				}
				c, cc := context.WithTimeout(ctx, 10*time.Second)
				_, err := cli.Txn(c).Then(puts...).Commit()
				cc()
				if err != nil {
					common.Die("put", err)
				}
			}
		}
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
			// The client closed the channel before we stopped: it gave up
			// on the lease (no answer in time); etcd may still hold it.
			if ctx.Err() == nil {
				atomic.AddInt64(&closed, 1)
			}
		}(ch)
	}
	common.Say("GRANTED", len(ids)*per, fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	common.Hold(f)
	// What etcd itself says: each lease's time left, each key's presence.
	gone := 0
	for _, id := range ids {
		c, cc := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := cli.TimeToLive(c, id)
		cc()
		if per == 1 && (err != nil || r.TTL <= 0) {
			gone++
		}
	}
	if per > 1 {
		c, cc := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := cli.Get(c, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		cc()
		if err != nil {
			common.Die("count", err)
		}
		gone = len(ids)*per - int(r.Count)
	}
	common.Say("HELD", len(ids)*per, "lost", atomic.LoadInt64(&closed)*int64(per), "expired", gone,
		"keepalive_answers", atomic.LoadInt64(&answers))
	cancel()
	wg.Wait()
	// Revoke them so the next system starts from a quiet etcd.
	for _, id := range ids {
		c, cc := context.WithTimeout(context.Background(), 10*time.Second)
		cli.Revoke(c, id)
		cc()
	}
}
