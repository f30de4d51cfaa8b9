/// @file test_call_watchdog.cpp
/// @brief The watchdog that bounds pq_backend's calls, over a socketpair
/// standing in for the connection: nothing done for a call in time, a
/// cancel at the deadline, the socket shut down when the cancel does not
/// bring the reply.
#include "pq/call_watchdog.hpp"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

namespace pglease::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using detail::call_watchdog;

/// The watchdog's cancel request for @p f.
template <typename F>
call_watchdog::cancel_request request(F&& f) {
    return std::make_shared<const std::function<void()>>(std::forward<F>(f));
}

/// A connected socket pair: "client" end 0, "server" end 1.
struct socket_pair {
    int fd[2] = {-1, -1};
    socket_pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
    ~socket_pair() {
        ::close(fd[0]);
        ::close(fd[1]);
    }
    socket_pair(const socket_pair&) = delete;
    socket_pair& operator=(const socket_pair&) = delete;
    socket_pair(socket_pair&&) = delete;
    socket_pair& operator=(socket_pair&&) = delete;

    /// Blocks like libpq waiting for the reply: bytes read (0 at shutdown).
    /// What the call's end read: 1 (a reply), 0 (EOF: shut down), -1
    /// (error), or -2 when nothing came within 5 s (a call left hanging).
    ssize_t wait_reply() const {
        pollfd p{fd[0], POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0)
            return -2;
        char b = 0;
        return ::recv(fd[0], &b, 1, 0);
    }
};

TEST(call_watchdog, a_call_in_time_is_left_alone) {
    socket_pair s;
    call_watchdog dog{100ms};
    std::atomic<int> cancels{0};
    dog.arm(steady::now() + 500ms, s.fd[0], request([&] { ++cancels; }));
    const char b = 'r';
    ASSERT_EQ(::send(s.fd[1], &b, 1, 0), 1); // the reply comes at once
    EXPECT_EQ(s.wait_reply(), 1);
    const auto done = dog.disarm();
    std::this_thread::sleep_for(600ms); // past the old deadline
    EXPECT_FALSE(done.cancelled);
    EXPECT_FALSE(done.severed);
    EXPECT_EQ(cancels, 0);
}

TEST(call_watchdog, past_the_deadline_the_cancel_ends_the_call) {
    socket_pair s;
    call_watchdog dog{2s};
    const auto start = steady::now();
    // The "server" answers the cancel with an error reply.
    dog.arm(start + 200ms, s.fd[0], request([&] {
                const char b = 'e';
                (void)::send(s.fd[1], &b, 1, 0);
            }));
    EXPECT_EQ(s.wait_reply(), 1);
    const auto took = steady::now() - start;
    const auto done = dog.disarm();
    EXPECT_TRUE(done.cancelled);
    EXPECT_FALSE(done.severed);
    EXPECT_GE(took, 200ms);
    EXPECT_LT(took, 600ms);
}

TEST(call_watchdog, a_cancel_that_does_not_land_shuts_the_socket_down) {
    socket_pair s;
    call_watchdog dog{150ms};
    std::atomic<int> cancels{0};
    const auto start = steady::now();
    dog.arm(start + 200ms, s.fd[0], request([&] { ++cancels; })); // nobody answers
    EXPECT_EQ(s.wait_reply(), 0);                                 // EOF: shut down
    const auto took = steady::now() - start;
    const auto done = dog.disarm();
    EXPECT_EQ(cancels, 1);
    EXPECT_TRUE(done.cancelled);
    EXPECT_TRUE(done.severed);
    EXPECT_GE(took, 350ms);
    EXPECT_LT(took, 900ms);
}

// A cancel request that blocks (PQcancel to a SIGSTOPped or unreachable
// postmaster: it waits as long as the server is frozen) must not hold the
// call: the socket is shut down one grace period after the deadline, and
// disarm() does not wait for the cancel either (it owns what it uses).
TEST(call_watchdog, a_cancel_that_blocks_does_not_hold_the_call) {
    socket_pair s;
    call_watchdog dog{150ms};
    auto cancels = std::make_shared<std::atomic<int>>(0);
    const auto start = steady::now();
    dog.arm(start + 200ms, s.fd[0], request([cancels] {
                ++*cancels;
                std::this_thread::sleep_for(3s); // the frozen server never answers
            }));
    EXPECT_EQ(s.wait_reply(), 0); // EOF: shut down
    const auto done = dog.disarm();
    const auto took = steady::now() - start;
    EXPECT_EQ(cancels->load(), 1);
    EXPECT_TRUE(done.cancelled);
    EXPECT_TRUE(done.severed);
    EXPECT_GE(took, 350ms);
    EXPECT_LT(took, 900ms); // not the 3 s the cancel takes
}

TEST(call_watchdog, is_reusable_call_after_call) {
    socket_pair s;
    // The cancel "lands" (answers) from the watchdog's own thread: on a
    // loaded machine that thread may wait longer than a short grace to run
    // it, and the socket is then (rightly) severed, which is not what this
    // test is about; 1 s of grace. MSG_NOSIGNAL: a send after a sever must
    // fail, not kill the test binary with SIGPIPE.
    call_watchdog dog{1000ms};
    for (int i = 0; i < 3; ++i) {
        dog.arm(steady::now() + 100ms, s.fd[0], request([&] {
                    const char b = 'e';
                    (void)::send(s.fd[1], &b, 1, MSG_NOSIGNAL);
                }));
        EXPECT_EQ(s.wait_reply(), 1);
        const auto done = dog.disarm();
        EXPECT_TRUE(done.cancelled) << "call " << i;
        EXPECT_FALSE(done.severed) << "call " << i;
    }
}

// run_fenced() of a lease: the deadline is the lease's, which a renewal
// moves. Asked at the first deadline, a later one postpones the cancel.
TEST(call_watchdog, a_deadline_moved_meanwhile_postpones_the_cancel) {
    socket_pair s;
    call_watchdog dog{100ms};
    const auto start = steady::now();
    std::atomic<int> asked{0};
    dog.arm(start + 100ms, s.fd[0], request([&] {
                const char b = 'e';
                (void)::send(s.fd[1], &b, 1, 0);
            }),
            [&] {
                ++asked;
                return start + 400ms; // renewed: later
            });
    EXPECT_EQ(s.wait_reply(), 1);
    const auto took = steady::now() - start;
    const auto done = dog.disarm();
    EXPECT_TRUE(done.cancelled);
    EXPECT_GE(took, 400ms);
    EXPECT_LT(took, 900ms);
    EXPECT_GE(asked.load(), 2); // at 100 ms, and at 400 ms (no later one then)
}

TEST(call_watchdog, a_deadline_that_did_not_move_lets_the_cancel_go) {
    socket_pair s;
    call_watchdog dog{100ms};
    const auto start = steady::now();
    dog.arm(start + 150ms, s.fd[0], request([&] {
                const char b = 'e';
                (void)::send(s.fd[1], &b, 1, 0);
            }),
            [] { return steady::time_point::min(); }); // the lease is gone
    EXPECT_EQ(s.wait_reply(), 1);
    const auto took = steady::now() - start;
    EXPECT_TRUE(dog.disarm().cancelled);
    EXPECT_GE(took, 150ms);
    EXPECT_LT(took, 600ms);
}

} // namespace
} // namespace pglease::test
