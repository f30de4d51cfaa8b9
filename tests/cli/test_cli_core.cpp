// Unit tests of pglease_cli_core: durations, connection strings, event
// payloads, run timings and the command line. No server.
#include "common/conninfo.hpp"
#include "common/duration.hpp"
#include "common/exit_codes.hpp"
#include "common/http_endpoint.hpp"
#include "common/options.hpp"
#include "common/run_plan.hpp"
#include "status/event.hpp"
#include "status/group_format.hpp"
#include "status/status_format.hpp"
#include "status/status_summary.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace pglease::cli;
using std::chrono::milliseconds;

TEST(Duration, Accepts) {
    const std::pair<const char*, long long> cases[] = {
        {"500ms", 500},   {"15s", 15000},
        {"2m", 120000},   {"1h", 3600000},
        {"1d", 86400000}, {"1h30m", 5400000},
        {"1m30s", 90000}, {"1.5s", 1500},
        {".5s", 500},     {"0s", 0},
        {"0.0005s", 0},   {"2s500ms", 2500},
        {"1.25m", 75000}, {"366d", 366LL * 86400000},
        {"007s", 7000},   {"1.0000000000001s", 1000}};
    for (const auto& [text, ms] : cases) {
        const auto d = parse_duration(text);
        ASSERT_TRUE(d.has_value()) << text;
        EXPECT_EQ(d->count(), ms) << text;
    }
}

TEST(Duration, Rejects) {
    for (const char* text :
         {"",   "5",   "s",    "ms",    "-1s",  "+1s",   "1 s",  " 1s",  "1s ",
          "1x", "1sm", "1mss", "1.s",   ".s",   "1..5s", "1e3s", "367d", "99999999999999999999s",
          "1S", "1us", "5,5s", "1h-1m", "0x10s"}) {
        EXPECT_FALSE(parse_duration(text).has_value()) << '"' << text << '"';
    }
}

TEST(Duration, FormatRoundTrips) {
    for (const long long ms :
         {0LL, 1LL, 250LL, 999LL, 1000LL, 1500LL, 1250LL, 60000LL, 90000LL, 3723004LL, 86400000LL,
          static_cast<long long>(max_duration.count())}) {
        const auto text = format_duration(milliseconds{ms});
        const auto back = parse_duration(text);
        ASSERT_TRUE(back.has_value()) << text;
        EXPECT_EQ(back->count(), ms) << text;
    }
    EXPECT_EQ(format_duration(milliseconds{1500}), "1.5s");
    EXPECT_EQ(format_duration(milliseconds{150000}), "2m30s");
    EXPECT_EQ(format_duration(milliseconds{-250}), "-250ms");
}

TEST(Conninfo, Classifies) {
    EXPECT_FALSE(is_conninfo("mydb"));
    EXPECT_TRUE(is_conninfo("dbname=mydb"));
    EXPECT_TRUE(is_conninfo("postgresql://u@h/db"));
    EXPECT_TRUE(is_conninfo("postgres://h"));
}

TEST(Conninfo, Builds) {
    std::string err;
    EXPECT_EQ(build_conninfo({}, err).value(), "");
    EXPECT_EQ(build_conninfo({"app", "", "", ""}, err).value(), "dbname='app'");
    EXPECT_EQ(build_conninfo({"it's", "", "", ""}, err).value(), "dbname='it\\'s'");
    EXPECT_EQ(build_conninfo({"host=a port=1", "b", "", "bob"}, err).value(),
              "host='b' port='1' user='bob'");
    EXPECT_EQ(build_conninfo({"postgresql://u@h:5/d", "", "7", ""}, err).value(),
              "dbname='d' host='h' port='7' user='u'");
    EXPECT_FALSE(build_conninfo({"host=a port", "", "", ""}, err).has_value());
    EXPECT_FALSE(err.empty());
    EXPECT_FALSE(build_conninfo({"nosuchkey=1", "", "", ""}, err).has_value());
}

TEST(Event, Parses) {
    const auto e = parse_event(
        R"({"event":"acquired","name":"jobs","holder":"w1","epoch":140737488355329,"expires_at":"2026-01-01T00:00:00+00:00"})");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->event, "acquired");
    EXPECT_EQ(e->name, "jobs");
    EXPECT_EQ(e->holder.value(), "w1");
    EXPECT_EQ(e->epoch, 140737488355329);
    const auto j = nlohmann::json::parse(event_json_line(*e, "now"));
    EXPECT_EQ(j.at("epoch").get<long long>(), 140737488355329);
    EXPECT_EQ(j.at("received_at"), "now");
    EXPECT_NE(event_text_line(*e, "").find("holder=w1"), std::string::npos);

    const auto r = parse_event(R"({"event":"revoked","name":"x","holder":null,"epoch":3})");
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->holder);
    EXPECT_TRUE(nlohmann::json::parse(event_json_line(*r, "")).at("holder").is_null());
}

TEST(Event, CarriesTheEvictedPid) {
    const auto e = parse_event(R"({"event":"evict","name":"j","holder":"w1","epoch":7,)"
                               R"("expires_at":"2026-11-21T09:00:15+00:00","pid":4242})");
    ASSERT_TRUE(e);
    ASSERT_TRUE(e->pid);
    EXPECT_EQ(*e->pid, 4242);
    EXPECT_NE(event_text_line(*e, "").find("pid=4242"), std::string::npos);
    EXPECT_NE(event_json_line(*e, "").find(R"("pid":4242)"), std::string::npos);
    EXPECT_FALSE(parse_event(R"({"event":"evict","name":"j","epoch":7,"pid":"x"})"));
    EXPECT_FALSE(parse_event(R"({"event":"acquired","name":"j","epoch":7})")->pid);
}

TEST(Event, Rejects) {
    for (const char* p : {"", "null", "[]", "{", "{}", R"({"event":1,"name":"x","epoch":1})",
                          R"({"event":"a","name":"x"})", R"({"event":"a","name":"x","epoch":1.5})",
                          R"({"event":"a","name":"x","epoch":18446744073709551615})",
                          R"({"event":"a","name":"x","epoch":1,"holder":5})"}) {
        EXPECT_FALSE(parse_event(p)) << p;
    }
}

TEST(RunPlan, Derives) {
    std::string err;
    const auto t = plan_run(milliseconds{15000}, std::nullopt, err);
    ASSERT_TRUE(t) << err;
    EXPECT_EQ(t->kill_after, milliseconds{3000});
    EXPECT_EQ(t->safety_margin, milliseconds{1000});
    EXPECT_EQ(t->renew_every, milliseconds{5000});
    EXPECT_EQ(t->step_down_after(), milliseconds{11000});
    // The step-down point leaves room for retries after the first renewal.
    for (const long long ttl : {300LL, 1000LL, 2000LL, 15000LL, 60000LL, 86400000LL}) {
        const auto p = plan_run(milliseconds{ttl}, std::nullopt, err);
        ASSERT_TRUE(p) << ttl;
        EXPECT_GT(p->step_down_after(), p->renew_every + p->retry) << ttl;
        EXPECT_LT(p->step_down_after() + p->kill_after, p->ttl) << ttl;
    }
}

TEST(RunPlan, Rejects) {
    std::string err;
    EXPECT_FALSE(plan_run(milliseconds{100}, std::nullopt, err));
    EXPECT_FALSE(plan_run(milliseconds{2000}, milliseconds{1000}, err));
    EXPECT_NE(err.find("kill-after"), std::string::npos);
    EXPECT_TRUE(plan_run(milliseconds{2000}, milliseconds{0}, err));
}

namespace {
parse_result parse(std::vector<std::string> args) {
    return parse_command_line(args);
}
} // namespace

TEST(HttpEndpoint, Parses) {
    std::string why;
    const auto port_only = parse_http_endpoint("9187", why);
    ASSERT_TRUE(port_only);
    EXPECT_EQ(port_only->host, "127.0.0.1"); // loopback unless asked
    EXPECT_EQ(port_only->port, 9187);
    const auto any = parse_http_endpoint("0.0.0.0:80", why);
    ASSERT_TRUE(any);
    EXPECT_EQ(any->host, "0.0.0.0");
    EXPECT_EQ(any->port, 80);
    const auto v6 = parse_http_endpoint("[::1]:0", why);
    ASSERT_TRUE(v6);
    EXPECT_EQ(v6->host, "::1");
    EXPECT_EQ(v6->port, 0);
}

TEST(HttpEndpoint, Rejects) {
    for (const char* bad : {"", "host:", ":80", "65536", "-1", "80x", "a b:80", "[]:80", "x:9:"}) {
        std::string why;
        EXPECT_FALSE(parse_http_endpoint(bad, why)) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
}

TEST(CommandLine, Run) {
    const auto r = parse({"-d", "app", "run", "--lease", "jobs", "--ttl", "3s", "--no-wait", "--",
                          "sh", "-c", "echo --lease", "--"});
    ASSERT_EQ(r.exit_code, -1) << r.err;
    EXPECT_EQ(r.command.what, parsed_command::kind::run);
    EXPECT_EQ(r.command.global.conn.dbname, "app");
    EXPECT_EQ(r.command.run.lease, "jobs");
    EXPECT_TRUE(r.command.run.no_wait);
    EXPECT_EQ(r.command.run.timing.ttl, milliseconds{3000});
    EXPECT_EQ(r.command.run.command, (std::vector<std::string>{"sh", "-c", "echo --lease", "--"}));
    const auto plain = parse({"run", "--lease", "x", "true"});
    ASSERT_EQ(plain.exit_code, -1) << plain.err;
    EXPECT_EQ(plain.command.run.command, std::vector<std::string>{"true"});
    EXPECT_EQ(plain.command.run.connect_timeout, milliseconds{60000}); // the default
}

TEST(CommandLine, RunConnectTimeout) {
    const auto r = parse({"run", "--lease", "x", "--connect-timeout", "2m", "--", "true"});
    ASSERT_EQ(r.exit_code, -1) << r.err;
    EXPECT_EQ(r.command.run.connect_timeout, milliseconds{120000});
    const auto zero = parse({"run", "--lease", "x", "--connect-timeout", "0s", "--", "true"});
    ASSERT_EQ(zero.exit_code, -1) << zero.err;
    EXPECT_EQ(zero.command.run.connect_timeout, milliseconds{0});
    EXPECT_EQ(parse({"run", "--lease", "x", "--connect-timeout", "soon", "--", "true"}).exit_code,
              2);
}

TEST(CommandLine, UsageErrorsAreTwo) {
    const std::vector<std::vector<std::string>> bad = {
        {},
        {"--frob"},
        {"frob"},
        {"run", "--lease", "x"},
        {"run", "--lease", "x", "--"},
        {"run", "--", "true"},
        {"run", "--lease", "x", "--ttl", "5", "--", "true"},
        {"run", "--lease", "x", "--ttl", "5x", "--", "true"},
        {"run", "--lease", "x", "--ttl", "2s", "--kill-after", "1s", "--", "true"},
        {"run", "--lease", "x", "--frob", "--", "true"},
        {"status", "--frob"},
        {"status", "a", "--lease", "b"},
        {"watch", "--count", "-1"},
        {"acquire", "x"},
        {"acquire", "x", "--identity", "me", "--ttl", "0s"},
        {"renew", "x", "--identity", "me"},
        {"renew", "x", "--identity", "me", "--epoch", "abc"},
        {"release", "x", "--identity", "me", "--epoch", "0"},
        {"fence", "t"},
        {"unfence"},
        {"status", "--", "true"},
        {"status", "a", "--prefix", "b"},
        {"status", "a", "--summary"},
        {"status", "--group", "g", "--summary"},
        {"status", "--group", "g", "--prefix", "p"},
        {"status", "--prefix"},
    };
    for (const auto& args : bad) {
        const auto r = parse(args);
        std::string joined;
        for (const auto& a : args)
            joined += a + ' ';
        EXPECT_EQ(r.exit_code, exit_usage) << joined;
        EXPECT_FALSE(r.err.empty()) << joined;
    }
}

TEST(CommandLine, HelpEverywhere) {
    for (const char* sub :
         {"run", "status", "watch", "acquire", "renew", "release", "revoke", "fence", "unfence"}) {
        const auto r = parse({sub, "--help"});
        EXPECT_EQ(r.exit_code, 0) << sub;
        EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
    }
    EXPECT_EQ(parse({"--help"}).exit_code, 0);
}

TEST(CommandLine, Primitives) {
    const auto r = parse({"renew", "--lease", "jobs", "--identity", "me", "--epoch", "42", "--ttl",
                          "1m", "-p", "5433"});
    ASSERT_EQ(r.exit_code, -1) << r.err;
    EXPECT_EQ(r.command.what, parsed_command::kind::renew);
    EXPECT_EQ(r.command.primitive.lease, "jobs");
    EXPECT_EQ(r.command.primitive.epoch, 42);
    EXPECT_EQ(r.command.primitive.ttl_given.value(), milliseconds{60000});
    EXPECT_EQ(r.command.global.conn.port, "5433");
    const auto f = parse({"fence", "public.t", "--lease", "l", "--column", "e"});
    ASSERT_EQ(f.exit_code, -1) << f.err;
    EXPECT_EQ(f.command.fence.table, "public.t");
    EXPECT_EQ(f.command.fence.column, "e");
}

TEST(StatusFormat, TableAndJson) {
    status_row r;
    r.name = "jobs";
    r.holder = "w1";
    r.epoch = 7;
    r.valid = true;
    r.remaining = milliseconds{1500};
    r.ttl = milliseconds{15000};
    const auto table = format_status_table({r});
    EXPECT_NE(table.find("NAME"), std::string::npos);
    EXPECT_NE(table.find("held"), std::string::npos);
    const auto j = nlohmann::json::parse(status_json(r));
    EXPECT_EQ(j.at("remaining_ms"), 1500);
    EXPECT_EQ(j.at("state"), "held");
    EXPECT_TRUE(nlohmann::json::parse(status_json_array({r, r})).is_array());
    EXPECT_TRUE(j.at("writers").is_null()); // a server older than 1.3
    status_row f;
    f.name = "free";
    EXPECT_STREQ(status_state(f), "free");
}

TEST(StatusFormat, OpenFencedWriters) {
    status_row r;
    r.name = "jobs";
    r.holder = "w1";
    r.epoch = 7;
    r.valid = true;
    r.writers = 3;
    const auto table = format_status_table({r});
    EXPECT_NE(table.find("WRITERS"), std::string::npos);
    EXPECT_NE(table.find(" held   3 "), std::string::npos) << table;
    EXPECT_EQ(nlohmann::json::parse(status_json(r)).at("writers"), 3);
}

TEST(CommandLine, StatusPrefixAndSummary) {
    const auto p = parse({"status", "--prefix", "tenant/", "--json"});
    ASSERT_EQ(p.exit_code, -1) << p.err;
    EXPECT_EQ(p.command.view.prefix, "tenant/");
    EXPECT_FALSE(p.command.view.summary);
    EXPECT_TRUE(p.command.view.json);
    const auto s = parse({"status", "--summary"});
    ASSERT_EQ(s.exit_code, -1) << s.err;
    EXPECT_TRUE(s.command.view.summary);
    EXPECT_TRUE(s.command.view.prefix.empty());
    EXPECT_TRUE(s.command.view.lease.empty());
}

TEST(StatusSummary, TableAndJson) {
    status_summary s;
    s.leases = 5;
    s.held = 3;
    s.expired = 1;
    s.free = 1;
    s.holders = {{"alpha", 2, 0, milliseconds{1500}},
                 {"b", 1, 1, milliseconds{900}},
                 {"gone", 0, 0, std::nullopt}};
    const auto table = format_summary_table(s);
    EXPECT_EQ(table, "LEASES  HELD  EXPIRED  FREE  HOLDERS\n"
                     "5       3     1        1     3\n"
                     "\n"
                     "HOLDER  HELD  EXPIRED  MIN_REMAINING\n"
                     "alpha   2     0        1.5s\n"
                     "b       1     1        900ms\n"
                     "gone    0     0        -\n")
        << table;
    const auto j = nlohmann::json::parse(summary_json(s));
    EXPECT_EQ(j.at("leases"), 5);
    EXPECT_EQ(j.at("free"), 1);
    ASSERT_EQ(j.at("holders").size(), 3U);
    EXPECT_EQ(j.at("holders")[1].at("holder"), "b");
    EXPECT_EQ(j.at("holders")[1].at("min_remaining_ms"), 900);
    EXPECT_TRUE(j.at("holders")[2].at("min_remaining_ms").is_null());
    EXPECT_EQ(format_summary_table({}), "LEASES  HELD  EXPIRED  FREE  HOLDERS\n"
                                        "0       0     0        0     0\n");
}

namespace pglease::cli {
namespace {

TEST(GroupStatus, NaturalOrderAndJson) {
    EXPECT_TRUE(natural_less("orders/2", "orders/10"));
    EXPECT_FALSE(natural_less("orders/10", "orders/2"));
    EXPECT_TRUE(natural_less("a/9", "b/1"));
    EXPECT_TRUE(natural_less("s/007", "s/8"));
    EXPECT_FALSE(natural_less("s/1", "s/1"));
    const std::vector<group_member_row> members{
        {"m1", 2, true, false, 1, std::chrono::seconds{3}, ""}};
    const std::vector<group_shard_row> shards{
        {"s/0", std::string{"m1"}, 7, true, std::chrono::seconds{3}, ""},
        {"s/1", std::nullopt, 8, false, std::chrono::milliseconds{0}, ""}};
    const auto j = nlohmann::json::parse(group_json("g", members, shards));
    EXPECT_EQ(j["members"][0]["state"], "live");
    EXPECT_EQ(j["shards"][1]["state"], "free");
    EXPECT_EQ(j["held"], 1);
    EXPECT_EQ(j["free"], 1);
    const auto table = format_group_table("g", members, shards);
    EXPECT_NE(table.find("group g: 1 live member, 2 shards (1 held, 1 free or expired)"),
              std::string::npos);
}

} // namespace
} // namespace pglease::cli
