// pg_lease with JDBC: acquire, renew on a scheduled executor, fenced writes, a stale write refused (LS001).
// Run: java -cp /usr/share/java/postgresql.jar examples/java/Fence.java   (Debian: libpostgresql-jdbc-java)
// Connects to PGHOST (TCP), PGPORT, PGDATABASE as PGUSER with PGPASSWORD; the role may call lease_revoke.
import java.sql.*;
import java.util.concurrent.*;

public class Fence {
    static final String LEASE = "scheduler", ACQUIRE = "SELECT epoch FROM lease_acquire(?, ?, ?::interval) WHERE acquired";
    static final long TTL_MS = 3000, MARGIN_MS = 500; // renew every TTL/3, give up MARGIN before expiry

    static Connection connect() throws SQLException { // from the PG* variables, which JDBC does not read itself
        var env = System.getenv();
        String user = env.getOrDefault("PGUSER", System.getProperty("user.name"));
        return DriverManager.getConnection("jdbc:postgresql://" + env.getOrDefault("PGHOST", "localhost") + ":"
            + env.getOrDefault("PGPORT", "5432") + "/" + env.getOrDefault("PGDATABASE", user), user, env.get("PGPASSWORD"));
    }

    static Object one(Connection conn, String sql, Object... params) throws SQLException {
        try (PreparedStatement st = conn.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) st.setObject(i + 1, params[i]);
            if (!st.execute()) return null; // the first column of the first row, if any
            try (ResultSet rs = st.getResultSet()) { return rs.next() ? rs.getObject(1) : null; }
        }
    }

    static void writeJob(Connection conn, long epoch, String state) throws SQLException { // in one transaction
        conn.setAutoCommit(false);
        try {
            one(conn, "SELECT lease_use(?, ?)", LEASE, epoch); // the fencing token of this transaction's writes
            one(conn, "INSERT INTO jobs VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET state = excluded.state", state);
            conn.commit();
        } catch (SQLException e) {
            conn.rollback();
            throw e;
        } finally {
            conn.setAutoCommit(true);
        }
    }

    public static void main(String[] args) throws Exception {
        var renewals = Executors.newSingleThreadScheduledExecutor();
        try (Connection a = connect(); Connection b = connect(); Connection renewer = connect();
             AutoCloseable stopRenewals = renewals::shutdownNow) {
            one(a, "CREATE EXTENSION IF NOT EXISTS pg_lease; CREATE TABLE IF NOT EXISTS jobs"
                + " (id int PRIMARY KEY, state text, epoch bigint); SELECT lease_fence('jobs', 'scheduler')");
            long[] deadline = {System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TTL_MS - MARGIN_MS)};
            Long epochA = (Long) one(a, ACQUIRE, LEASE, "worker-a", TTL_MS + " ms");
            if (epochA == null) throw new IllegalStateException(LEASE + " is held by someone else");
            System.out.println("worker-a acquired epoch " + epochA);
            renewals.scheduleWithFixedDelay(() -> { // on its own connection; stops on NULL or past the deadline
                long sent = System.nanoTime();
                try {
                    var until = (Timestamp) one(renewer, "SELECT lease_renew(?, 'worker-a', ?)", LEASE, epochA);
                    if (until != null) {
                        deadline[0] = sent + TimeUnit.MILLISECONDS.toNanos(TTL_MS - MARGIN_MS);
                        System.out.println("worker-a renewed until " + until.toInstant());
                        return;
                    }
                    System.out.println("worker-a lost the lease: renew returned NULL; stopping");
                } catch (SQLException e) {
                    if (System.nanoTime() - deadline[0] < 0) return; // keep trying until the local deadline
                    System.out.println("worker-a renew failed past the deadline: " + e.getMessage());
                }
                renewals.shutdown(); // no more renewals: worker-a must stop working
            }, TTL_MS / 3, TTL_MS / 3, TimeUnit.MILLISECONDS);
            Thread.sleep(TTL_MS / 2);
            writeJob(a, epochA, "started by worker-a");
            System.out.println("worker-a wrote job 1 with epoch " + epochA);
            one(b, "SELECT lease_revoke(?)", LEASE); // an operator revokes it; worker-b takes over at once
            System.out.println("worker-b acquired epoch " + one(b, ACQUIRE, LEASE, "worker-b", TTL_MS + " ms"));
            try {
                writeJob(a, epochA, "stale write by worker-a"); // a write that was already under way
            } catch (SQLException e) {
                System.out.println("worker-a stale write refused: SQLSTATE " + e.getSQLState() + " (" + e.getMessage() + ")");
            }
            renewals.awaitTermination(TTL_MS, TimeUnit.MILLISECONDS); // until the renewer notices
        }
    }
}
