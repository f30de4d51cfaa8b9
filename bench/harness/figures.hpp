/// @file figures.hpp
/// @brief The sections of a run; each adds its rows to the report.
#pragma once

#include "harness.hpp"

namespace bench {

void run_lease_ops(const settings& s, report& out);  ///< lease_* vs bare UPDATE
void run_fence(const settings& s, report& out);      ///< fenced vs unfenced INSERT
void run_scale(const settings& s, report& out);      ///< renewals needed vs achieved
void run_growth(const settings& s, report& out);     ///< latencies as the tables grow
void run_etcd(const settings& s, report& out);
void run_redis(const settings& s, report& out);
void run_failover(const settings& s, report& out);   ///< kill -9 of the leader
void run_handover(const settings& s, report& out);   ///< graceful release
void cleanup_pg(const settings& s);                  ///< drops what the PG sections made
int leader_child(int argc, char** argv);             ///< --leader-child: an elector until killed
void run_many_leases(const settings& s, report& out); ///< 100,000 leases, 100 lease_set processes
double run_etcd_many(const settings& s, report& out); ///< as many etcd leases; returns its headroom
int lease_set_child(int argc, char** argv);          ///< --lease-set-child: one process of run_many_leases

} // namespace bench
