/// @file contract.cpp
/// @brief The player of cases.json (contract.hpp). Epochs are symbols
/// ("e1"): a server's epochs carry timeline bits, so a case says which
/// reply's epoch another equals or exceeds, never a number.
#include "contract.hpp"

#include "pglease/error.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace pglease::contract {

using nlohmann::json;
using std::chrono::milliseconds;

std::string test_name(const contract_case& c) {
    std::string n = c.name;
    for (char& ch : n)
        if (std::isalnum(static_cast<unsigned char>(ch)) == 0)
            ch = '_';
    return n;
}

std::vector<contract_case> load_cases(const std::string& path) {
    std::ifstream in{path};
    if (!in)
        throw std::runtime_error{"contract: cannot read " + path};
    const json table = json::parse(in);
    std::vector<contract_case> out;
    for (const auto& c : table.at("cases"))
        out.push_back({c.at("name"), c.at("rule"), c.at("steps").dump()});
    return out;
}

namespace {

/// One case being played: its names, its epochs, what went wrong.
class player {
public:
    player(target& t, std::string prefix)
        : m_t{t}
        , m_prefix{std::move(prefix)} {}

    void step(const json& s) {
        const std::string op = s.at("do");
        const json expect = s.value("expect", json::object());
        if (op == "wait") {
            m_t.wait(milliseconds{s.at("ms").get<long>()});
            return;
        }
        try {
            run(op, s, expect);
            if (expect.contains("sqlstate"))
                fail(op, "succeeded, expected SQLSTATE " + expect["sqlstate"].get<std::string>());
        } catch (const error& e) {
            if (!expect.contains("sqlstate"))
                fail(op, std::string{"failed: "} + e.what());
            else if (e.sqlstate() != expect["sqlstate"].get<std::string>())
                fail(op, "SQLSTATE " + (e.sqlstate().empty() ? "(none)" : e.sqlstate()) +
                             ", expected " + expect["sqlstate"].get<std::string>() + " (" +
                             e.what() + ")");
        }
    }

    [[nodiscard]] const std::string& failures() const noexcept { return m_failures; }
    void set_step(std::size_t i) noexcept { m_step = i; }

private:
    void run(const std::string& op, const json& s, const json& expect) {
        backend& db = m_t.session();
        const auto deadline = clock::time_point::max();
        if (op == "acquire") {
            const auto r = db.acquire(lease(s), holder(s, "holder"), ttl(s), delay(s), deadline);
            check_bool(op, "acquired", r.acquired, expect);
            if (expect.contains("holder"))
                check_text(op, "holder", r.holder, holder(expect, "holder"));
            epochs(op, r.epoch, expect);
        } else if (op == "renew") {
            const auto r = db.renew(lease(s), holder(s, "holder"), epoch(s), ttl(s), deadline);
            check_bool(op, "renewed", r.has_value(), expect);
        } else if (op == "release") {
            check_bool(op, "released", db.release(lease(s), holder(s, "holder"), epoch(s)), expect);
        } else if (op == "revoke") {
            check_bool(op, "revoked", db.revoke(lease(s)), expect);
        } else if (op == "handover") {
            const auto r =
                db.handover(lease(s), holder(s, "holder"), epoch(s), holder(s, "successor"));
            check_bool(op, "handed", r.has_value(), expect);
            if (r)
                epochs(op, *r, expect);
        } else if (op == "acquire_many") {
            const auto r =
                db.acquire_many(leases(s), holder(s, "holder"), ttl(s), delay(s), deadline);
            each(op, r.size(), expect, [&](std::size_t i, const json& e) {
                check_bool(op, "acquired", r[i].acquired, e);
                if (e.contains("holder"))
                    check_text(op, "holder", r[i].holder, holder(e, "holder"));
                epochs(op, r[i].epoch, e);
            });
        } else if (op == "renew_many") {
            const auto r =
                db.renew_many(leases(s), holder(s, "holder"), epoch_list(s), ttl(s), deadline);
            each(op, r.size(), expect, [&](std::size_t i, const json& e) {
                check_bool(op, "renewed", r[i].has_value(), e);
            });
        } else if (op == "release_many") {
            const auto r = db.release_many(leases(s), holder(s, "holder"), epoch_list(s), deadline);
            each(op, r.size(), expect,
                 [&](std::size_t i, const json& e) { check_bool(op, "released", r[i], e); });
        } else if (op == "status") {
            const auto r = db.status(lease(s));
            check_bool(op, "valid", r && r->valid, expect);
            if (expect.contains("holder"))
                check_text(op, "holder", r ? r->holder : "", holder(expect, "holder"));
            epochs(op, r ? r->epoch : 0, expect);
        } else if (op == "fence") {
            const std::string refused = m_t.fenced_write(lease(s), epoch(s));
            if (refused != expect.value("refused", std::string{}))
                fail(op, "the write " +
                             (refused.empty() ? std::string{"committed"}
                                              : "was refused with " + refused) +
                             ", expected " +
                             (expect.contains("refused") ? expect["refused"].get<std::string>()
                                                         : std::string{"it to commit"}));
        } else {
            throw std::runtime_error{"contract: unknown step \"" + op + "\""};
        }
    }

    /// Lease "L" of the case (unique per run); "" and "LONG" (256 bytes) as they are.
    [[nodiscard]] std::string lease(const json& s) const {
        const std::string n = s.at("lease");
        return special(n).value_or(m_prefix + n);
    }
    /// The leases of a *_many step ("leases": ["L", "M"]), in order.
    [[nodiscard]] std::vector<std::string> leases(const json& s) const {
        std::vector<std::string> out;
        for (const auto& n : s.at("leases"))
            out.push_back(lease({{"lease", n}}));
        return out;
    }
    /// The epochs of a *_many step ("epochs": ["e1", 1]), one per lease.
    [[nodiscard]] std::vector<std::int64_t> epoch_list(const json& s) const {
        std::vector<std::int64_t> out;
        for (const auto& e : s.at("epochs"))
            out.push_back(epoch({{"epoch", e}}));
        return out;
    }
    /// A *_many step's replies: one per lease, each checked against its
    /// entry of "each" (what acquire, renew or release alone expects).
    template <typename Check>
    void each(const std::string& op, std::size_t replies, const json& expect, Check check) {
        const json& per = expect.at("each");
        if (replies != per.size()) {
            fail(op, std::to_string(replies) + " replies, expected " + std::to_string(per.size()));
            return;
        }
        for (std::size_t i = 0; i < replies; ++i)
            check(i, per[i]);
    }
    [[nodiscard]] static std::string holder(const json& s, const char* key) {
        const std::string h = s.at(key);
        return special(h).value_or(h);
    }
    [[nodiscard]] static std::optional<std::string> special(const std::string& v) {
        if (v == "EMPTY")
            return std::string{};
        if (v == "LONG")
            return std::string(256, 'x');
        return std::nullopt;
    }
    [[nodiscard]] static milliseconds ttl(const json& s) {
        return milliseconds{s.value("ttl", 60000L)};
    }
    [[nodiscard]] static milliseconds delay(const json& s) {
        return milliseconds{s.value("lock_delay", 0L)};
    }
    /// An epoch argument: a symbol bound earlier ("e1"), or a number.
    [[nodiscard]] std::int64_t epoch(const json& s) const {
        const json& e = s.at("epoch");
        if (e.is_number())
            return e.get<std::int64_t>();
        const auto it = m_epochs.find(e.get<std::string>());
        if (it == m_epochs.end())
            throw std::runtime_error{"contract: epoch " + e.get<std::string>() + " not bound"};
        return it->second;
    }

    /// "bind": name this epoch; "same": equal to a bound one; "above":
    /// greater than a bound one.
    void epochs(const std::string& op, std::int64_t got, const json& expect) {
        if (expect.contains("same") && got != epoch({{"epoch", expect["same"]}}))
            fail(op, "epoch " + std::to_string(got) + ", expected the same as " +
                         expect["same"].get<std::string>());
        if (expect.contains("above") && got <= epoch({{"epoch", expect["above"]}}))
            fail(op, "epoch " + std::to_string(got) + ", expected above " +
                         expect["above"].get<std::string>());
        if (expect.contains("bind"))
            m_epochs[expect["bind"].get<std::string>()] = got;
    }

    void check_bool(const std::string& op, const char* key, bool got, const json& expect) {
        if (expect.contains(key) && expect[key].get<bool>() != got)
            fail(op, std::string{key} + " " + (got ? "true" : "false") + ", expected " +
                         (got ? "false" : "true"));
    }
    void check_text(const std::string& op, const char* key, const std::string& got,
                    const std::string& want) {
        if (got != want)
            fail(op, std::string{key} + " \"" + got + "\", expected \"" + want + "\"");
    }
    void fail(const std::string& op, const std::string& what) {
        std::ostringstream o;
        o << "  step " << m_step + 1 << " (" << op << "): " << what << "\n";
        m_failures += o.str();
    }

    target& m_t;
    std::string m_prefix;
    std::map<std::string, std::int64_t> m_epochs;
    std::string m_failures;
    std::size_t m_step = 0;
};

} // namespace

std::string play(const contract_case& c, target& t, const std::string& prefix) {
    player p{t, prefix};
    const json steps = json::parse(c.steps);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        p.set_step(i);
        p.step(steps[i]);
    }
    return p.failures();
}

} // namespace pglease::contract
