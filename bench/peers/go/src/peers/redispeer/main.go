// redispeer: a Redis lock as its users write it (redigo, one connection per
// client): SET key id NX PX ttl to take it, a Lua compare-and-renew
// (PEXPIRE if the value is still ours) at ttl/3, a compare-and-delete to
// release. Followers poll with SET NX every retry period: Redis has no
// wait-for-release primitive a lock client uses. Redis here is as people
// run it for locks: in memory, no fsync, no AOF: a crash forgets every lock.
//
//	redispeer elect -endpoint H:P -name N -id ID -ttl 2s -retry 300ms [-pg CONNINFO -table T [-guard] [-pause-at N]]
//	    -guard: each write first checks GET key == id at Redis
//	    -fence: the work goes into Redis instead, each write a script that
//	    appends it only if the key is still ours (atomic on one node)
//	    LOST when a renewal finds the key not ours, or when the ttl has
//	    passed since the last renewal that succeeded was sent (Redlock's
//	    validity time); -rejoin: then back to SET NX in the same process
//	redispeer audit -name N      the -fence writes in Redis's order
//	redispeer ops -op cycle|renew -clients N -seconds S
//	redispeer many -leases 1000 -ttl 30s -hold 300s
package main

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"peers/common"
)

var renewScript = redis.NewScript(1, `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
var fencedWrite = redis.NewScript(2, `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("rpush", KEYS[2], ARGV[1]) else return 0 end`)
var releaseScript = redis.NewScript(1, `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

func dial(f *common.Flags) redis.Conn {
	c, err := tryDial(f)
	if err != nil {
		common.Die("redis", err)
	}
	return c
}

func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }

// tryDial is dial without dying: a campaign or a renewer on a dead link
// dials again at its next try.
func tryDial(f *common.Flags) (redis.Conn, error) {
	return redis.Dial("tcp", f.Endpoint, redis.DialConnectTimeout(2*time.Second),
		redis.DialReadTimeout(2*time.Second), redis.DialWriteTimeout(2*time.Second))
}

func elect(f *common.Flags) {
	resign := common.Resign()
	// -rejoin: after LOST the lock loop takes the process back to SET NX.
	for term(f, resign) && f.Rejoin {
	}
}

// term: one campaign and one term; true when the term ended by LOST.
func term(f *common.Flags, resign <-chan struct{}) bool {
	key := "peers:" + f.Name
	var c redis.Conn
	common.Say("CAMPAIGN", common.NowUs())
	deadline := time.Now().Add(120 * time.Second)
	var sent time.Time
	said := ""
	for {
		var err error
		if c == nil {
			c, err = tryDial(f)
		}
		if err == nil {
			sent = time.Now()
			var ok string
			ok, err = redis.String(c.Do("SET", key, f.ID, "NX", "PX", ms(f.TTL)))
			if err == nil && ok == "OK" {
				break
			}
		}
		if err != nil && err != redis.ErrNil {
			if !f.Rejoin {
				common.Die("set", err)
			}
			if said != err.Error() { // each new error once, for the record
				said = err.Error()
				fmt.Fprintln(os.Stderr, "campaign:", said)
			}
			if c != nil {
				c.Close() // redigo: a connection that failed stays failed
				c = nil
			}
		}
		if time.Now().After(deadline) {
			common.Die("campaign", fmt.Errorf("not elected in 120 s"))
		}
		time.Sleep(f.Retry)
	}
	defer c.Close()
	common.Say("LEADER", common.NowUs())

	// The term ends when a renewal finds another value (or none), or when
	// the ttl has passed since the last renewal that succeeded was sent
	// (the SET at first): the key may be gone at the server by then
	// (Redlock's validity time; a renewal that fails or hangs does not
	// renew). The renewer is on its own connection, at ttl/3.
	var leading int32 = 1
	lost := make(chan struct{})
	var once sync.Once
	lose := func(why string) {
		once.Do(func() {
			atomic.StoreInt32(&leading, 0)
			common.Say("LOST", common.NowUs(), why)
			close(lost)
		})
	}
	expiry := time.AfterFunc(time.Until(sent.Add(f.TTL)), func() { lose("deadline") })
	stop := make(chan struct{})
	go func() {
		defer expiry.Stop()
		rc, _ := tryDial(f)
		defer func() {
			if rc != nil {
				rc.Close()
			}
		}()
		t := time.NewTicker(f.TTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-lost:
				return
			case <-t.C:
				var err error
				if rc == nil {
					if rc, err = tryDial(f); err != nil {
						rc = nil
						continue
					}
				}
				at := time.Now()
				n, err := redis.Int(renewScript.Do(rc, key, f.ID, ms(f.TTL)))
				switch {
				case err != nil:
					rc.Close()
					rc = nil
				case n == 0:
					lose("not_ours")
					return
				default:
					if atomic.LoadInt32(&leading) == 1 {
						expiry.Reset(time.Until(at.Add(f.TTL)))
					}
				}
			}
		}
	}()

	if f.Table != "" {
		write := common.PGWriter(f, 0)
		if f.Fence {
			// The check and the append in one script: Redis runs it
			// atomically, so the append happens only while the key is ours.
			wc := dial(f)
			write = func(seq int) error {
				n, err := redis.Int(fencedWrite.Do(wc, key, "peers-work:"+f.Name, f.ID))
				if err != nil {
					return err
				}
				if n == 0 {
					return common.ErrFenced
				}
				return nil
			}
		}
		isLeading := func() bool {
			select {
			case <-resign:
				return false
			default:
				return atomic.LoadInt32(&leading) == 1
			}
		}
		var guard func() bool
		if f.Guard {
			gc := dial(f)
			guard = func() bool {
				v, err := redis.String(gc.Do("GET", key))
				return err == nil && v == f.ID
			}
		}
		common.Loop(f, isLeading, guard, write)
	}
	var rejoin <-chan struct{} // nil: never ready
	if f.Rejoin {
		rejoin = lost
	}
	select {
	case <-resign:
	case <-rejoin:
		close(stop)
		return true
	case <-time.After(120 * time.Second):
	}
	close(stop)
	if _, err := releaseScript.Do(c, key, f.ID); err != nil {
		common.Die("release", err)
	}
	common.Say("RESIGNED", common.NowUs())
	return false
}

func ops(f *common.Flags) {
	common.Ops(f, func(i int) func() bool {
		c := dial(f)
		key := fmt.Sprintf("peers:ops:%s:%d", f.ID, i)
		switch f.Op {
		case "cycle":
			// take and release: SET NX PX, then compare-and-delete
			return func() bool {
				ok, err := redis.String(c.Do("SET", key, f.ID, "NX", "PX", ms(f.TTL)))
				if err != nil || ok != "OK" {
					return false
				}
				n, err := redis.Int(releaseScript.Do(c, key, f.ID))
				return err == nil && n == 1
			}
		case "renew":
			if _, err := c.Do("SET", key, f.ID, "PX", 60000); err != nil {
				common.Die("set", err)
			}
			return func() bool {
				n, err := redis.Int(renewScript.Do(c, key, f.ID, 60000))
				return err == nil && n == 1
			}
		}
		common.Die("ops", fmt.Errorf("unknown op %q", f.Op))
		return nil
	})
}

// many: f.Leases keys with PX ttl, renewed by one pipelined round of the
// compare-and-renew script every ttl/3.
func many(f *common.Flags) {
	c := dial(f)
	defer c.Close()
	keys := make([]string, f.Leases)
	start := time.Now()
	for i := range keys {
		keys[i] = fmt.Sprintf("peers:many:%s:%d", f.ID, i)
		c.Send("SET", keys[i], f.ID, "NX", "PX", ms(f.TTL))
	}
	c.Flush()
	for range keys {
		if ok, err := redis.String(c.Receive()); err != nil || ok != "OK" {
			common.Die("set", fmt.Errorf("%v %v", ok, err))
		}
	}
	common.Say("GRANTED", len(keys), fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	lost := 0
	done := make(chan struct{})
	go func() { common.Hold(f); close(done) }()
	t := time.NewTicker(f.TTL / 3)
	defer t.Stop()
renewing:
	for {
		select {
		case <-done:
			break renewing
		case <-t.C:
		}
		for _, k := range keys {
			renewScript.Send(c, k, f.ID, ms(f.TTL))
		}
		c.Flush()
		for range keys {
			if n, err := redis.Int(c.Receive()); err != nil || n != 1 {
				lost++
			}
		}
	}
	// What Redis itself holds: each key still ours.
	for _, k := range keys {
		c.Send("GET", k)
	}
	c.Flush()
	expired := 0
	for range keys {
		if v, err := redis.String(c.Receive()); err != nil || v != f.ID {
			expired++
		}
	}
	common.Say("HELD", len(keys), "lost", lost, "expired", expired, "keepalive_answers", 0)
	for _, k := range keys {
		c.Send("DEL", k)
	}
	c.Flush()
	for range keys {
		c.Receive()
	}
}

func main() {
	f := common.Parse()
	switch f.Mode {
	case "elect":
		elect(f)
	case "ops":
		ops(f)
	case "many":
		many(f)
	case "audit":
		c := dial(f)
		writers, err := redis.Strings(c.Do("LRANGE", "peers-work:"+f.Name, 0, -1))
		if err != nil {
			common.Die("audit", err)
		}
		common.Audit(writers)
	default:
		fmt.Fprintln(os.Stderr, "redispeer: unknown mode", f.Mode)
		os.Exit(2)
	}
}
