// ops.go: etcdpeer's throughput figures (main.go has the usage).

package main

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/clientv3"
	pb "go.etcd.io/etcd/etcdserver/etcdserverpb"
	"peers/common"
)

// ops: each client its own clientv3.Client (its own gRPC connection).
func ops(f *common.Flags) {
	var clients []*clientv3.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	// -ttl: the grant-revoke leases' ttl, and how long the leases a
	// client keeps for the whole run live (whole seconds in etcd; the
	// driver passes one longer than the run, so none expires mid-run).
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
			g, err := cli.Grant(ctx, ttl)
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
			// etcd's idiom: many keepalives in flight on the one
			// LeaseKeepAlive stream clientv3's KeepAlive uses (it sends for
			// every lease due, then reads answers as they come). One round
			// trip here: -window requests, one per lease, sent back to
			// back, then their answers; counted per lease. etcd keeps the
			// expiry in the leader's memory (not persisted).
			ids := make([]int64, f.Window)
			for k := range ids {
				g, err := cli.Grant(ctx, ttl)
				if err != nil {
					common.Die("grant", err)
				}
				ids[k] = int64(g.ID)
			}
			stream, err := pb.NewLeaseClient(cli.ActiveConnection()).LeaseKeepAlive(ctx)
			if err != nil {
				common.Die("stream", err)
			}
			return func() bool {
				for _, id := range ids {
					if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: id}); err != nil {
						return false
					}
				}
				for range ids {
					if r, err := stream.Recv(); err != nil || r.TTL <= 0 {
						return false
					}
				}
				return true
			}
		case "keepalive-once":
			g, err := cli.Grant(ctx, ttl)
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
