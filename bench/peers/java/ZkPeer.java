// ZkPeer: ZooKeeper as its users run it for leader election, through Apache
// Curator (Debian libcurator-*-java 5.4, ZooKeeper 3.8 client): a
// LeaderLatch on a session whose timeout is the lease ttl. The same command
// line as the other peers of bench/peers (see README.md there):
//
//   ZkPeer elect -endpoint H:P -name N -id ID -ttl 2s -retry 300ms [-pg URL -table T [-guard] [-pause-at N]]
//       LeaderLatch.start + await; LEADER when elected; writes into T while
//       hasLeadership(); "resign" on stdin closes the latch (deletes its
//       node). LOST at the latch's notLeader; it joins again by itself
//       after a reconnect (-rejoin is accepted, a no-op). -guard: each
//       write first checks at ZooKeeper that the latch's
//       own node still exists (our session is alive there). -fence: the work
//       goes into ZooKeeper instead, each write a multi(check(our latch
//       node), create(...)): ZooKeeper's own fence, for writes into it.
//   ZkPeer audit -name N
//       the -fence writes of election N in ZooKeeper's commit order
//   ZkPeer ops -op cycle|setdata -clients N -seconds S
//       cycle: create an EPHEMERAL_SEQUENTIAL node and delete it (both
//       durable: ZooKeeper fsyncs its transaction log); setdata: a versioned
//       setData, ZooKeeper's compare-and-swap.
//   ZkPeer many -leases 1000 -sessions 100 -ttl 30s -hold 300s
//       sessions holding that many ephemeral nodes each: the session's pings
//       keep them all; held until "resign" on stdin (or the bound).
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.BooleanSupplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;

public final class ZkPeer {
    private final Map<String, String> opt = new HashMap<>();

    private String get(String k, String def) { return opt.getOrDefault(k, def); }

    private int getInt(String k, int def) { return Integer.parseInt(get(k, Integer.toString(def))); }

    /** Durations as the Go peers take them: 2s, 300ms, 1m. */
    private long millis(String k, String def) {
        String v = get(k, def);
        if (v.endsWith("ms")) return Long.parseLong(v.substring(0, v.length() - 2));
        if (v.endsWith("s")) return (long) (Double.parseDouble(v.substring(0, v.length() - 1)) * 1000);
        if (v.endsWith("m")) return Long.parseLong(v.substring(0, v.length() - 1)) * 60000;
        return Long.parseLong(v);
    }

    static synchronized void say(Object... fields) {
        StringBuilder b = new StringBuilder();
        for (Object f : fields) b.append(b.length() == 0 ? "" : " ").append(f);
        System.out.println(b);
        System.out.flush();
    }

    static long nowUs() {
        java.time.Instant t = java.time.Instant.now();
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1000;
    }

    /** A Curator client with the session timeout set like the lease ttl and
     *  the retry period of the other peers. */
    private CuratorFramework client(long sessionMs) throws InterruptedException {
        long retry = millis("retry", "300ms");
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(get("endpoint", "127.0.0.1:2181"))
                .sessionTimeoutMs((int) sessionMs)
                .connectionTimeoutMs((int) Math.min(sessionMs, 5000))
                .retryPolicy(new RetryNTimes(10, (int) retry))
                .build();
        c.start();
        if (!c.blockUntilConnected(60, TimeUnit.SECONDS)) throw new IllegalStateException("zookeeper: not connected");
        return c;
    }

    private void elect() throws Exception {
        String id = get("id", "z" + ProcessHandle.current().pid());
        CuratorFramework c = client(millis("ttl", "2s"));
        CountDownLatch resign = new CountDownLatch(1);
        Thread stdin = new Thread(() -> {
            try (java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(System.in))) {
                String line;
                while ((line = r.readLine()) != null && !line.equals("resign")) { }
            } catch (java.io.IOException e) { }
            resign.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();

        LeaderLatch latch = new LeaderLatch(c, "/peers/" + get("name", "peers"), id);
        // Curator's word: isLeader / notLeader (the latch drops leadership
        // on SUSPENDED, i.e. when the ZooKeeper client lost its connection,
        // and on LOST); after RECONNECTED the latch joins again by itself.
        // STATE lines: the connection states, for the record.
        latch.addListener(new LeaderLatchListener() {
            @Override public void isLeader() { say("LEADER", nowUs()); }
            @Override public void notLeader() { say("LOST", nowUs(), "notLeader"); }
        });
        c.getConnectionStateListenable().addListener((client, state) -> say("STATE", nowUs(), state));
        say("CAMPAIGN", nowUs());
        latch.start();
        if (!latch.await(120, TimeUnit.SECONDS)) throw new IllegalStateException("not elected in 120 s");

        String table = get("table", "");
        if (!table.isEmpty()) {
            BooleanSupplier guard = null;
            if (opt.containsKey("guard")) {
                String ours = latch.getOurPath();
                guard = () -> {
                    try { return c.checkExists().forPath(ours) != null; } catch (Exception e) { return false; }
                };
            }
            Write write = null;
            if (opt.containsKey("fence")) {
                // The check and the create in one multi: ZooKeeper applies
                // both or neither, so the write lands only while our latch
                // node (our session's) exists. Sequential names give the order.
                String ours = latch.getOurPath();
                String dir = "/peers-work/" + get("name", "peers");
                c.create().orSetData().creatingParentsIfNeeded().forPath(dir, new byte[0]);
                write = seq -> {
                    try {
                        c.transaction().forOperations(c.transactionOp().check().forPath(ours),
                                c.transactionOp().create().withMode(CreateMode.PERSISTENT_SEQUENTIAL)
                                        .forPath(dir + "/w-", id.getBytes()));
                        return null;
                    } catch (org.apache.zookeeper.KeeperException e) {
                        return "fenced " + e.code();
                    }
                };
            }
            writeLoop(() -> latch.hasLeadership() && resign.getCount() > 0, guard, table, id, write);
        }
        resign.await(120, TimeUnit.SECONDS);
        latch.close();
        say("RESIGNED", nowUs());
        c.close();
    }

    /** The leader's work, as the Go peers' Writer.Loop: one INSERT per write
     *  while leading; SIGSTOP itself between the guard and write pause-at. */
    private interface Write { String run(int seq) throws Exception; } // null: written; else why refused

    private void writeLoop(BooleanSupplier leading, BooleanSupplier guard, String table, String id, Write peer) throws Exception {
        int pauseAt = getInt("pause-at", 0);
        long gap = millis("write-gap", "5ms");
        int seq = 0;
        long deadline = System.nanoTime() + 60_000_000_000L;
        try (Connection db = DriverManager.getConnection(get("pg", ""));
             PreparedStatement ins = db.prepareStatement("INSERT INTO " + table + " (writer, seq, token) VALUES (?, ?, NULL)")) {
            while (System.nanoTime() < deadline && leading.getAsBoolean()) {
                if (guard != null && !guard.getAsBoolean()) break;
                seq++;
                if (seq == pauseAt) {
                    say("PAUSING", nowUs());
                    new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid())).start().waitFor();
                }
                if (peer != null) {
                    String refused = peer.run(seq);
                    if (refused != null) { say("WRITE_REFUSED", nowUs(), refused.replace(' ', '_')); break; }
                    Thread.sleep(gap);
                    continue;
                }
                ins.setString(1, id);
                ins.setInt(2, seq);
                try {
                    ins.executeUpdate();
                } catch (java.sql.SQLException e) {
                    say("WRITE_REFUSED", nowUs(), e.getSQLState());
                    break;
                }
                Thread.sleep(gap);
            }
        }
        say("STOPPED_WRITING", nowUs(), seq);
    }

    private interface Op { boolean run() throws Exception; }

    private void ops() throws Exception {
        String op = get("op", "cycle");
        int clients = getInt("clients", 1);
        long maxOps = getInt("max-ops", 1000000);
        long nanos = (long) (Double.parseDouble(get("seconds", "1")) * 1e9);
        String id = get("id", "z" + ProcessHandle.current().pid());
        List<CuratorFramework> cs = new ArrayList<>();
        List<Op> runs = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            CuratorFramework c = client(10000);
            cs.add(c);
            String dir = "/peers/ops/" + id + "/" + i;
            c.create().orSetData().creatingParentsIfNeeded().forPath(dir, new byte[0]);
            if (op.equals("cycle")) {
                runs.add(() -> {
                    String p = c.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(dir + "/n-", id.getBytes());
                    c.delete().forPath(p);
                    return true;
                });
            } else if (op.equals("setdata")) {
                int[] version = {c.checkExists().forPath(dir).getVersion()};
                runs.add(() -> {
                    Stat s = c.setData().withVersion(version[0]).forPath(dir, id.getBytes());
                    version[0] = s.getVersion();
                    return true;
                });
            } else {
                throw new IllegalArgumentException("unknown op " + op);
            }
        }
        AtomicLongArray counts = new AtomicLongArray(clients);
        AtomicBoolean failed = new AtomicBoolean();
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        long[] start = new long[1];
        for (int i = 0; i < clients; i++) {
            final int k = i;
            Thread t = new Thread(() -> {
                try {
                    go.await();
                    long end = start[0] + nanos;
                    while (counts.get(k) < maxOps && System.nanoTime() < end) {
                        if (!runs.get(k).run()) { failed.set(true); return; }
                        counts.incrementAndGet(k);
                    }
                } catch (Exception e) {
                    System.err.println("ops " + op + ": " + e);
                    failed.set(true);
                }
            });
            t.start();
            ts.add(t);
        }
        start[0] = System.nanoTime();
        go.countDown();
        for (Thread t : ts) t.join();
        double elapsed = (System.nanoTime() - start[0]) / 1e9;
        long total = 0;
        for (int i = 0; i < clients; i++) total += counts.get(i);
        for (CuratorFramework c : cs) c.close();
        if (failed.get()) { System.err.println("ops " + op + ": failed operations"); System.exit(1); }
        say("OPS", op, clients, total, String.format("%.3f", elapsed), String.format("%.0f", total / elapsed));
    }

    /** -sessions sessions in this JVM (one process standing for that many
     *  clients), each holding -leases ephemeral nodes: the session's pings
     *  keep them all, so a session is ZooKeeper's unit of liveness. */
    private void many() throws Exception {
        int n = getInt("leases", 1000);
        int sessions = getInt("sessions", 1);
        long ttl = millis("ttl", "30s");
        String id = get("id", "z" + ProcessHandle.current().pid());
        List<CuratorFramework> cs = new ArrayList<>();
        for (int s = 0; s < sessions; s++) cs.add(client(ttl));
        long t0 = System.nanoTime();
        List<Thread> ts = new ArrayList<>();
        AtomicBoolean failed = new AtomicBoolean();
        for (int s = 0; s < sessions; s++) {
            CuratorFramework c = cs.get(s);
            String dir = "/peers/many/" + id + "/" + s;
            Thread t = new Thread(() -> {
                try {
                    c.create().orSetData().creatingParentsIfNeeded().forPath(dir, new byte[0]);
                    for (int i = 0; i < n; i++) c.create().withMode(CreateMode.EPHEMERAL).forPath(dir + "/" + i);
                } catch (Exception e) {
                    System.err.println("many: " + e);
                    failed.set(true);
                }
            });
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) t.join();
        if (failed.get()) System.exit(1);
        say("GRANTED", n * sessions, String.format("%.3f", (System.nanoTime() - t0) / 1e9));
        CountDownLatch end = new CountDownLatch(1);
        Thread stdin = new Thread(() -> {
            try (java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(System.in))) {
                String line;
                while ((line = r.readLine()) != null && !line.equals("resign")) { }
            } catch (java.io.IOException e) { }
            end.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();
        end.await(millis("hold", "300s"), TimeUnit.MILLISECONDS);
        int alive = 0;
        for (int s = 0; s < sessions; s++) alive += cs.get(s).getChildren().forPath("/peers/many/" + id + "/" + s).size();
        say("HELD", n * sessions, "lost", n * sessions - alive, "expired", n * sessions - alive, "keepalive_answers", 0);
        for (CuratorFramework c : cs) c.close(); // the session's end deletes its ephemeral nodes
    }

    /** The -fence writes of one election, in ZooKeeper's commit order (the
     *  sequence numbers the parent gave them). */
    private void audit() throws Exception {
        CuratorFramework c = client(10000);
        String dir = "/peers-work/" + get("name", "peers");
        List<String> names = new ArrayList<>(c.checkExists().forPath(dir) == null ? List.of() : c.getChildren().forPath(dir));
        java.util.Collections.sort(names); // w-0000000001, ...: zero-padded
        int stale = 0, old = 0, nw = 0;
        for (String name : names) {
            String w = new String(c.getData().forPath(dir + "/" + name));
            if (w.equals("new")) nw++;
            else if (w.equals("old")) { old++; if (nw > 0) stale++; }
        }
        say("AUDIT", stale, old, nw);
        c.close();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) { System.err.println("usage: ZkPeer elect|ops|many -flags"); System.exit(2); }
        ZkPeer p = new ZkPeer();
        for (int i = 1; i < args.length; i++) {
            String k = args[i].replaceFirst("^-+", "");
            if (k.equals("guard") || k.equals("fence") || k.equals("rejoin")) { p.opt.put(k, "1"); continue; }
            if (i + 1 >= args.length) { System.err.println("missing value for " + args[i]); System.exit(2); }
            p.opt.put(k, args[++i]);
        }
        switch (args[0]) {
            case "elect": p.elect(); break;
            case "ops": p.ops(); break;
            case "many": p.many(); break;
            case "audit": p.audit(); break;
            default: System.err.println("unknown mode " + args[0]); System.exit(2);
        }
        System.exit(0);
    }
}
