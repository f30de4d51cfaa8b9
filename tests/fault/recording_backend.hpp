/// @file recording_backend.hpp
/// @brief pq_backend, recording each lease call of the elector with its
/// send time t0, reply time t, result r (ok / no / fail) and the epoch.
#pragma once

#include "common.hpp"

#include <pglease/pglease.hpp>

namespace fault {

using nlohmann::json;

class recording_backend final : public pglease::backend {
public:
    recording_backend(pglease::connection_options opts, history_file& h)
        : m_inner{std::move(opts)}
        , m_h{h} {}

private:
    static json entry(const char* op, const std::string& name, const std::string& holder) {
        return json{{"op", op}, {"w", holder}, {"L", name}};
    }

    /// Records @p e as invoked, before sending: the lease stopped believing
    /// already, and a SIGKILL after the server freed it must not leave the
    /// belief open (a release, a handover).
    void invoked(const json& e) {
        json inv = e;
        inv["ph"] = "inv";
        inv["t"] = mono_ns();
        m_h.append(inv);
    }

    /// Runs @p call between send time t0 and reply time t, and records the
    /// outcome: @p outcome fills in the reply's fields, a failure records
    /// r = "fail" and the error, then rethrows.
    template <typename Call, typename Outcome>
    auto recorded(json e, Call&& call, Outcome&& outcome) {
        e["t0"] = mono_ns();
        try {
            auto result = call();
            e["t"] = mono_ns();
            outcome(e, result);
            m_h.append(e);
            return result;
        } catch (const std::exception& ex) {
            e["t"] = mono_ns();
            e["r"] = "fail";
            e["x"] = ex.what();
            m_h.append(e);
            throw;
        }
    }

public:
    using pglease::backend::acquire;
    pglease::acquire_reply acquire(const std::string& name, const std::string& holder,
                                   std::chrono::milliseconds ttl,
                                   std::chrono::milliseconds lock_delay,
                                   pglease::clock::time_point deadline) override {
        return recorded(
            entry("acq", name, holder),
            [&] { return m_inner.acquire(name, holder, ttl, lock_delay, deadline); },
            [](json& e, const pglease::acquire_reply& reply) {
                e["r"] = reply.acquired ? "ok" : "no";
                e["e"] = reply.epoch;
                e["h"] = reply.holder;
            });
    }

    std::optional<std::chrono::microseconds> renew(const std::string& name,
                                                   const std::string& holder, std::int64_t epoch,
                                                   std::chrono::milliseconds ttl,
                                                   pglease::clock::time_point deadline) override {
        json e = entry("renew", name, holder);
        e["e"] = epoch;
        return recorded(
            std::move(e), [&] { return m_inner.renew(name, holder, epoch, ttl, deadline); },
            [](json& out, const std::optional<std::chrono::microseconds>& left) {
                out["r"] = left ? "ok" : "no";
            });
    }

    bool release(const std::string& name, const std::string& holder, std::int64_t epoch) override {
        json e = entry("rel", name, holder);
        e["e"] = epoch;
        invoked(e);
        return recorded(
            std::move(e), [&] { return m_inner.release(name, holder, epoch); },
            [](json& out, bool freed) { out["r"] = freed ? "ok" : "no"; });
    }

    /// A handover ends the holder's grant as a release does: recorded as
    /// "rel" (with "to", the successor, and "ne", its epoch), invoked first.
    std::optional<std::int64_t> handover(const std::string& name, const std::string& holder,
                                         std::int64_t epoch,
                                         const std::string& successor) override {
        json e = entry("rel", name, holder);
        e["e"] = epoch;
        e["to"] = successor;
        invoked(e);
        return recorded(
            std::move(e), [&] { return m_inner.handover(name, holder, epoch, successor); },
            [](json& out, const std::optional<std::int64_t>& next) {
                out["r"] = next ? "ok" : "no";
                out["ne"] = next.value_or(0);
            });
    }

    bool take_handover_hint(const std::string& name, const std::string& holder) noexcept override {
        m_hinted = holder;
        return m_inner.take_handover_hint(name, holder);
    }

    /// A successor's read that confirms a handover to it (lease.cpp, after
    /// take_handover_hint): recorded as its acquire ("via" "read"), the
    /// grant the holder's handover committed for it.
    std::optional<pglease::lease_record> status_if_durable(const std::string& name) override {
        return recorded(
            entry("acq", name, m_hinted), [&] { return m_inner.status_if_durable(name); },
            [this](json& e, const std::optional<pglease::lease_record>& row) {
                const bool ours = row && row->valid && row->holder == m_hinted;
                e["r"] = ours ? "ok" : "no";
                e["e"] = row ? row->epoch : 0;
                e["h"] = row ? row->holder : "";
                e["via"] = "read";
            });
    }

    bool revoke(const std::string& name) override { return m_inner.revoke(name); }
    std::optional<pglease::lease_record> status(const std::string& name) override {
        return m_inner.status(name);
    }
    bool listen() override { return m_inner.listen(); }
    void unlisten() noexcept override { m_inner.unlisten(); }
    bool wait_for_change(const std::string& name,
                         pglease::clock::time_point until) noexcept override {
        return m_inner.wait_for_change(name, until);
    }
    void interrupt() noexcept override { m_inner.interrupt(); }
    std::string store_id(pglease::clock::time_point deadline) override {
        return m_inner.store_id(deadline);
    }

private:
    pglease::pq_backend m_inner;
    history_file& m_h;
    std::string m_hinted; ///< the identity of the last take_handover_hint
};

} // namespace fault
