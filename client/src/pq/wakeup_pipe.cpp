/// @file wakeup_pipe.cpp
/// @brief The self-pipe behind pq_backend::interrupt().
#include "pq/wakeup_pipe.hpp"

#include "pglease/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pglease::detail {

wakeup_pipe::wakeup_pipe() {
    if (::pipe2(m_fds, O_NONBLOCK | O_CLOEXEC) != 0)
        throw error{std::string{"pipe2: "} + std::strerror(errno)};
}

wakeup_pipe::~wakeup_pipe() {
    ::close(m_fds[0]);
    ::close(m_fds[1]);
}

void wakeup_pipe::signal() noexcept {
    const char byte = 1;
    // A full pipe is already readable: EAGAIN is as good as success.
    [[maybe_unused]] const auto n = ::write(m_fds[1], &byte, 1);
}

void wakeup_pipe::drain() noexcept {
    char buf[64];
    while (::read(m_fds[0], buf, sizeof buf) > 0) {
    }
}

} // namespace pglease::detail
