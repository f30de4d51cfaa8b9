"""Throughput: one operation, N clients, a fixed time: (rate, operations done)."""


def ops(b, system, op, clients, seconds):
    p = b.peer(system, "ops", f"ops {op}", "-op", op, "-clients", str(clients),
               "-seconds", str(seconds), "-ttl", "60s")
    got = p.wait_for("OPS", 120 + seconds)
    p.stop(grace=30)
    if not got or p.proc.returncode != 0:
        p.fail(f"ops {op} at {clients} clients failed")
    return float(got[5]), int(got[3])
