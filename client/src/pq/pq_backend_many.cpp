/// @file pq_backend_many.cpp
/// @brief pq_backend's calls over many leases, each one statement: batched
/// renew, acquire and release, and the lease_status reads.
#include "pq/pq_arrays.hpp"
#include "pq/pq_session.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace pglease {
namespace {

using detail::bounded;
using detail::interval_text;
using detail::micros;

/// A lease_status row (pq_statements::status and ::list) as a record.
/// A row (pqxx::row, or libpqxx 8's row_ref) as a lease record.
template <typename Row>
lease_record record_of(const Row& row) {
    lease_record rec;
    rec.name = row[0].template as<std::string>();
    rec.holder = row[1].template as<std::string>();
    rec.epoch = row[2].template as<std::int64_t>();
    rec.valid = row[3].template as<bool>();
    rec.remaining = std::chrono::microseconds{row[4].template as<long long>()};
    return rec;
}

/// Runs @p one over [begin, end) slices of @p count names, in order.
template <typename One>
void in_slices(std::size_t count, One&& one) {
    constexpr std::size_t per = pq_backend::names_per_statement;
    for (std::size_t begin = 0; begin < count; begin += per)
        one(begin, std::min(count, begin + per));
}

} // namespace

std::optional<lease_record> pq_backend::read_status(const detail::statement& st,
                                                    const std::string& name) {
    return call("lease_status", bounded(clock::time_point::max(), m_options.call_timeout),
                [&]() -> std::optional<lease_record> {
                    const pqxx::result r = m_session->exec(st, name);
                    if (r.empty())
                        return std::nullopt;
                    return record_of(r[0]);
                });
}

std::optional<lease_record> pq_backend::status(const std::string& name) {
    return read_status(m_sql->status, name);
}

std::optional<lease_record> pq_backend::status_if_durable(const std::string& name) {
    return read_status(m_sql->status_if_durable, name);
}

std::vector<std::optional<std::chrono::microseconds>>
pq_backend::renew_many(const std::vector<std::string>& names, const std::string& holder,
                       const std::vector<std::int64_t>& epochs, std::chrono::milliseconds ttl,
                       clock::time_point deadline) {
    require_epoch_per_name("renew_many", names, epochs);
    std::vector<std::optional<std::chrono::microseconds>> out(names.size());
    if (names.empty())
        return out;
    const std::string name_array = detail::text_array(names);
    const std::string epoch_array = detail::bigint_array(epochs);
    // Many rows take longer than one: bounded as release_many, and always by
    // the renew deadline the holder passes.
    return call("lease_renew_many", bounded(deadline, m_options.acquire_timeout), [&] {
        const pqxx::result r =
            m_session->exec(m_sql->renew_many, name_array, holder, epoch_array, interval_text(ttl));
        if (static_cast<std::size_t>(r.size()) != names.size())
            throw error{"lease_renew_many: " + std::to_string(r.size()) + " rows for " +
                        std::to_string(names.size()) + " leases"};
        for (std::size_t i = 0; i < names.size(); ++i)
            out[i] = micros(r[static_cast<pqxx::result::size_type>(i)][0]);
        return out;
    });
}

std::vector<acquire_reply> pq_backend::acquire_many(const std::vector<std::string>& names,
                                                    const std::string& holder,
                                                    std::chrono::milliseconds ttl,
                                                    std::chrono::milliseconds lock_delay,
                                                    clock::time_point deadline) {
    if (names.empty())
        return {};
    return call("lease_acquire_many", bounded(deadline, m_options.acquire_timeout), [&] {
        std::vector<acquire_reply> out;
        out.reserve(names.size());
        in_slices(names.size(), [&](std::size_t begin, std::size_t end) {
            const std::string name_array = detail::text_array(names, begin, end);
            const pqxx::result r =
                lock_delay == std::chrono::milliseconds::zero()
                    ? m_session->exec(m_sql->acquire_many, name_array, holder, interval_text(ttl))
                    : m_session->exec(m_sql->acquire_many_delayed, name_array, holder,
                                      interval_text(ttl), interval_text(lock_delay));
            if (static_cast<std::size_t>(r.size()) != end - begin)
                throw error{"lease_acquire_many: " + std::to_string(r.size()) + " rows for " +
                            std::to_string(end - begin) + " leases"};
            for (const auto& row : r) {
                acquire_reply reply;
                reply.acquired = row[0].as<bool>();
                reply.epoch = row[1].is_null() ? 0 : row[1].as<std::int64_t>();
                reply.holder = row[2].as<std::string>();
                reply.remaining = micros(row[3]);
                out.push_back(std::move(reply));
            }
        });
        return out;
    });
}

std::vector<bool> pq_backend::release_many(const std::vector<std::string>& names,
                                           const std::string& holder,
                                           const std::vector<std::int64_t>& epochs,
                                           clock::time_point deadline) {
    require_epoch_per_name("release_many", names, epochs);
    if (names.empty())
        return {};
    return call("lease_release_many", bounded(deadline, m_options.acquire_timeout), [&] {
        std::vector<bool> out;
        out.reserve(names.size());
        in_slices(names.size(), [&](std::size_t begin, std::size_t end) {
            const pqxx::result r =
                m_session->exec(m_sql->release_many, detail::text_array(names, begin, end), holder,
                                detail::bigint_array(epochs, begin, end));
            if (static_cast<std::size_t>(r.size()) != end - begin)
                throw error{"lease_release_many: " + std::to_string(r.size()) + " rows for " +
                            std::to_string(end - begin) + " leases"};
            for (const auto& row : r)
                out.push_back(row[0].as<bool>());
        });
        return out;
    });
}

std::vector<lease_record> pq_backend::list(const std::string& prefix) {
    // "lease_status": a read-only call, as status() (no commit to be unsure of).
    return call("lease_status", bounded(clock::time_point::max(), m_options.call_timeout), [&] {
        std::vector<lease_record> out;
        for (const auto& row : m_session->exec(m_sql->list, prefix))
            out.push_back(record_of(row));
        return out;
    });
}

} // namespace pglease
