/// @file kv_figures.cpp
/// @brief The stores people pick instead: etcd (v3 API through its JSON
/// gateway, libcurl, one keep-alive HTTP connection per client) and Redis
/// (hiredis, one connection per client).
#include "etcd_client.hpp"
#include "figures.hpp"
#include "pg.hpp"

#include <hiredis/hiredis.h>
#include <nlohmann/json.hpp>

#include <map>
#include <stdexcept>

namespace bench {

namespace {

struct etcd_worker {
    std::unique_ptr<etcd_client> http;
    std::string key; ///< base64
    std::int64_t value = 0;
    std::string lease_id;
    // The same client's pg_lease side: one held lease, renewed.
    std::unique_ptr<pg_session> db;
    std::string lease, epoch;
};

const char* compare_holder = "bench-etcd-compare";

} // namespace

void run_etcd(const settings& s, report& out) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    for (const int n : s.clients) {
        auto ws = open_workers<etcd_worker>(static_cast<std::size_t>(n), [&](std::size_t i) {
            auto w = std::make_unique<etcd_worker>();
            w->http = std::make_unique<etcd_client>(s.etcd_url);
            w->key =
                base64("bench/" + s.tag + "/cas/" + std::to_string(n) + "/" + std::to_string(i));
            w->http->post("/v3/kv/put", {{"key", w->key}, {"value", base64("0")}});
            const auto grant = w->http->post("/v3/lease/grant", {{"TTL", 60}});
            w->lease_id = grant.at("ID").get<std::string>();
            w->db = std::make_unique<pg_session>(s.pg_conninfo);
            pg_result ext =
                w->db->query("SELECT quote_ident(extnamespace::regnamespace::text) || '.' "
                             "FROM pg_extension WHERE extname = 'pg_lease'");
            if (ext.rows() != 1)
                throw std::runtime_error(
                    "the pg_lease extension is not installed in this database");
            w->lease = "e" + s.tag + "-" + std::to_string(n) + "-" + std::to_string(i);
            pg_result g = w->db->query("SELECT epoch FROM " + ext.text(0, 0) +
                                           "lease_acquire($1, $2, '60 s')",
                                       {w->lease, compare_holder});
            w->epoch = g.text(0, 0);
            w->db->prepare("ren", "SELECT " + ext.text(0, 0) + "lease_renew($1, $2, $3::bigint)");
            return w;
        });
        std::vector<double> cas, keepalive, renew;
        const auto pg_renew = [&] {
            renew.push_back(run_phase(ws.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                                etcd_worker& w = *ws[i];
                                pg_result r = w.db->run("ren", {w.lease, compare_holder, w.epoch});
                                if (r.is_null(0, 0))
                                    throw std::runtime_error("renew of " + w.lease + " failed");
                                return 1;
                            }).rate());
        };
        for (int round = 0; round < s.rounds; ++round) {
            // pg_lease's renew runs next to etcd's operations, before them in
            // even rounds and after them in odd ones.
            if (round % 2 == 0)
                pg_renew();
            // Durable: a txn is committed through raft and etcd's fsynced WAL.
            cas.push_back(
                run_phase(ws.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                    etcd_worker& w = *ws[i];
                    const nlohmann::json txn = {
                        {"compare",
                         {{{"key", w.key},
                           {"result", "EQUAL"},
                           {"target", "VALUE"},
                           {"value", base64(std::to_string(w.value))}}}},
                        {"success",
                         {{{"request_put",
                            {{"key", w.key}, {"value", base64(std::to_string(w.value + 1))}}}}}}};
                    const auto reply = w.http->post("/v3/kv/txn", txn);
                    if (!reply.value("succeeded", false))
                        throw std::runtime_error("etcd CAS did not succeed");
                    ++w.value;
                    return 1;
                }).rate());
            // Not persisted: the leader keeps lease expiry in memory.
            keepalive.push_back(
                run_phase(ws.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                    etcd_worker& w = *ws[i];
                    const auto reply = w.http->post("/v3/lease/keepalive", {{"ID", w.lease_id}});
                    if (!reply.contains("result") || !reply["result"].contains("TTL"))
                        throw std::runtime_error("etcd keepalive failed: " + reply.dump());
                    return 1;
                }).rate());
            if (round % 2 == 1)
                pg_renew();
        }
        row r;
        r.section = "etcd";
        r.clients = n;
        r.figure = "etcd txn compare-and-swap";
        r.samples = cas;
        r.value = median(cas);
        r.note = "durable (raft log fsynced)";
        log("etcd: CAS x" + std::to_string(n) + ": " + std::to_string(r.value));
        out.add(r);
        r.figure = "etcd lease keepalive";
        r.samples = keepalive;
        r.value = median(keepalive);
        r.note = "NOT persisted (expiry kept in the leader's memory)";
        log("etcd: keepalive x" + std::to_string(n) + ": " + std::to_string(r.value));
        out.add(r);
        const auto compare = [&](const std::vector<double>& other, const std::string& name,
                                 double goal) {
            row c;
            c.section = "vs_etcd";
            c.figure = "lease_renew (durable) vs " + name;
            c.clients = n;
            c.samples = renew;
            c.value = median(renew);
            c.baseline_samples = other;
            c.baseline = median(other);
            c.baseline_name = name;
            c.goal = goal;
            c.note = "measured side by side, same rounds";
            out.add(std::move(c));
        };
        compare(keepalive, "etcd keepalive", 1.0);
        compare(cas, "etcd txn CAS", 2.0);
    }
}

namespace {

struct redis_worker {
    redisContext* c = nullptr;
    std::string prefix;
    std::int64_t n = 0;
    std::string sha;
    redis_worker() = default;
    redis_worker(const redis_worker&) = delete;
    redis_worker& operator=(const redis_worker&) = delete;
    ~redis_worker() {
        if (c)
            redisFree(c);
    }
};

redisReply* command(redis_worker& w, const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : args) {
        argv.push_back(a.c_str());
        lens.push_back(a.size());
    }
    auto* reply = static_cast<redisReply*>(
        redisCommandArgv(w.c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    if (reply == nullptr)
        throw std::runtime_error(std::string{"redis: "} + w.c->errstr);
    if (reply->type == REDIS_REPLY_ERROR) {
        std::string msg = std::string{"redis: "} + reply->str;
        freeReplyObject(reply);
        throw std::runtime_error(msg);
    }
    return reply;
}

const char* renew_script = "if redis.call('get', KEYS[1]) == ARGV[1] then "
                           "return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

} // namespace

void run_redis(const settings& s, report& out) {
    for (const int n : s.clients) {
        auto ws = open_workers<redis_worker>(static_cast<std::size_t>(n), [&](std::size_t i) {
            auto w = std::make_unique<redis_worker>();
            w->c = redisConnect(s.redis_host.c_str(), s.redis_port);
            if (w->c == nullptr || w->c->err)
                throw std::runtime_error("redis: cannot connect");
            w->prefix = "bench:" + s.tag + ":" + std::to_string(n) + ":" + std::to_string(i) + ":";
            redisReply* r = command(*w, {"SCRIPT", "LOAD", renew_script});
            w->sha = r->str;
            freeReplyObject(r);
            freeReplyObject(command(*w, {"SET", w->prefix + "held", "me", "PX", "60000"}));
            return w;
        });
        std::vector<double> setnx, renew;
        for (int round = 0; round < s.rounds; ++round) {
            // Acquire of a free key, as lease_acquire of a free lease.
            setnx.push_back(run_phase(ws.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                                redis_worker& w = *ws[i];
                                redisReply* r = command(w, {"SET", w.prefix + std::to_string(w.n++),
                                                            "me", "NX", "PX", "2000"});
                                const bool ok = r->type == REDIS_REPLY_STATUS;
                                freeReplyObject(r);
                                if (!ok)
                                    throw std::runtime_error("redis SET NX refused a free key");
                                return 1;
                            }).rate());
            renew.push_back(run_phase(ws.size(), s.seconds, [&](std::size_t i) -> std::int64_t {
                                redis_worker& w = *ws[i];
                                redisReply* r = command(
                                    w, {"EVALSHA", w.sha, "1", w.prefix + "held", "me", "60000"});
                                const bool ok = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
                                freeReplyObject(r);
                                if (!ok)
                                    throw std::runtime_error("redis compare-and-renew failed");
                                return 1;
                            }).rate());
        }
        row r;
        r.section = "redis";
        r.clients = n;
        r.figure = "redis SET NX PX";
        r.samples = setnx;
        r.value = median(setnx);
        r.note = "NOT durable: in memory, no fsync (appendonly off)";
        log("redis: SET NX x" + std::to_string(n) + ": " + std::to_string(r.value));
        out.add(r);
        r.figure = "redis Lua compare-and-renew";
        r.samples = renew;
        r.value = median(renew);
        log("redis: Lua renew x" + std::to_string(n) + ": " + std::to_string(r.value));
        out.add(r);
    }
}

} // namespace bench
