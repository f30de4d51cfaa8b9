/// @file nemesis.hpp
/// @brief The nemesis: one function per fault kind. Each injects for real,
/// verifies that the fault bit (the process it paused led, the server did
/// restart, the server's clock did move, the promoted standby did miss
/// acknowledged grants and writes, ...) and records it only then. Each
/// returns whether the injection was effective; the caller retries one
/// that found no target. A kind switched off with --disable-nemesis does
/// nothing and returns false.
#pragma once

#include "phase.hpp"

#include <string>

namespace fault {

/// SIGSTOP the leader for @p mult x ttl, then SIGCONT ("pause").
bool inject_pause(phase& ph, const std::string& lease, double mult);
/// SIGKILL the leader; a fresh worker replaces it (kind @p kind).
bool inject_kill(phase& ph, const std::string& lease, bool storm, const std::string& kind);
/// pg_terminate_backend of the leader's elector session mid-renew ("renew")
/// or of its write session "mid-write" / "at-commit".
bool inject_terminate(phase& ph, const std::string& lease, const std::string& aim);
/// pg_ctl stop -m immediate, then start ("crash").
bool inject_crash(phase& ph);
/// Steps the server's wall clock by @p step s (libfaketime), the workers'
/// by -step; verified against the server's clock_timestamp().
bool inject_clock(phase& ph, int& server_offset, int step);
/// Stops the leader inside an open fenced transaction for @p mult x ttl:
/// "idle" (idle in transaction after its fenced writes) or "busy" (its
/// backend running a statement) ("pause-in-txn").
bool inject_pause_in_txn(phase& ph, const std::string& lease, const std::string& mode, double mult);
/// Has the leader run a fenced transaction of 2.5 x ttl ("long-txn").
bool inject_long_txn(phase& ph, const std::string& lease);
/// Asks the leader to hand the lease over (elector::yield_to) to another
/// campaigning worker ("handover"); effective when that worker then holds
/// the lease with a newer epoch (nemesis_handover.cpp).
bool inject_handover(phase& ph, const std::string& lease);
/// Kills the primary and promotes the standby. Asynchronous: the
/// standby's WAL receiver is stopped first, the leader is killed so a new
/// grant and acknowledged writes happen on the old primary only, and the
/// injection counts only if the promoted standby verifiably lacks them.
bool inject_failover(phase& ph, bool sync);
/// Waits until the standby streams (and for @p sync is synchronous) and
/// has flushed everything.
void wait_replication(phase& ph, bool sync);
// --- network faults (nemesis_net.cpp) ---

/// Cuts the leader's host off the network (phase::use_hosts) the @p way
/// given, until another process leads (at most 5 x ttl) and one ttl more,
/// then heals it ("netcut-both", "netcut-in", "netcut-out"). Effective
/// when another process led while it was cut off.
bool inject_netcut(phase& ph, const std::string& lease, cut_way way);
/// Slows the leader's links (phase::use_relays: the store's, and the
/// downstream's if any) until another process leads
/// (at most 5 x ttl) and one ttl more, then heals it: "netdelay" (each way
/// 1.5 x ttl late), "netjitter" (each way 0.5 to 1.5 x ttl late, in
/// order), "netflap" (held 0.5 to 1.5 x ttl, then up 0.1 to 0.3 x ttl, in
/// turn). What was in flight arrives after the heal. Effective when the
/// link slowed the leader's traffic and another process led meanwhile.
bool inject_netslow(phase& ph, const std::string& lease, const std::string& kind);
/// Cuts the leader's link to the downstream database alone (held both
/// ways, phase::down_relay_of): "netdown-cut" for 3 x ttl, its store link
/// intact (effective when a downstream call was held); "netdown-stale" then
/// cuts its store link too, ttl/4 later, until another process leads and
/// one ttl more, and heals both: the downstream writes it sent before the
/// cut arrive after the new leader's raise (effective when another process
/// led and a downstream call was held).
bool inject_netdown(phase& ph, const std::string& lease, const std::string& kind);

// --- shared by the injections ---

/// The identity holding a valid grant of @p lease now ("" if none or unknown).
std::string valid_holder(phase& ph, const std::string& lease);
/// True if worker identity @p identity ("p3.1") is process @p label ("p3").
bool same_process(const std::string& identity, const std::string& label);

} // namespace fault
