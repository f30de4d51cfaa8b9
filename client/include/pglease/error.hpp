/// @file error.hpp
/// @brief The pglease error tree: one root, pglease::error, and one type per
/// thing a caller may want to handle differently.
///
/// @code
///   error                    every failure the library reports
///   |- config_error          a bad configuration, rejected before any I/O
///   |- invalid_argument      the server refused an argument (22023, 22004)
///   |- permission_denied     the server refused the role (42501)
///   |- missing_token         a fenced write carried no token (LS003)
///   |- lease_lost            this client does not hold the lease any more
///   |  |- fence_rejected     the server's fence refused a write (LS001, LS002)
///   |  `- lease_evicted      a takeover ended the fenced transaction (57P01, 57014,
///   |                        broken connection) after the lease ran out
///   |- connection_lost       the connection broke; nothing was committed
///   `- commit_unknown        the connection broke during COMMIT: outcome unknown
/// @endcode
///
/// Errors that come from the server carry its SQLSTATE in sqlstate().
#pragma once

#include <stdexcept>
#include <string>

namespace pglease {

/// Root of every exception pglease throws (never thrown itself for the
/// specific cases below).
class error : public std::runtime_error {
public:
    /// @param what message; @param sqlstate the server's SQLSTATE, or empty.
    explicit error(const std::string& what, std::string sqlstate = {})
        : std::runtime_error{what}
        , m_sqlstate{std::move(sqlstate)} {}

    /// The five-character SQLSTATE of the server error behind this one, or
    /// an empty string when the error did not come from the server.
    [[nodiscard]] const std::string& sqlstate() const noexcept { return m_sqlstate; }

private:
    std::string m_sqlstate;
};

/// A configuration the library refuses before doing any I/O (for example
/// ttl <= renew deadline, an empty identity, a missing callback).
class config_error : public error {
public:
    using error::error;
};

/// The server rejected an argument: empty or oversized name or holder, a ttl
/// out of range (SQLSTATE 22023), or a NULL (22004).
class invalid_argument : public error {
public:
    using error::error;
};

/// The server refused the database role (SQLSTATE 42501), e.g. EXECUTE on
/// lease_revoke, or renewing a lease granted to another role.
class permission_denied : public error {
public:
    using error::error;
};

/// A write to a fenced table carried no fencing token (SQLSTATE LS003): a
/// programming error, not a lost lease.
class missing_token : public error {
public:
    using error::error;
};

/// This client no longer holds the lease: its local deadline passed, a renew
/// returned NULL, or the server's fence refused a write. Whatever the cause,
/// the holder must stop acting as leader at once.
class lease_lost : public error {
public:
    using error::error;
};

/// The fence trigger refused a write: a newer epoch was granted (LS001,
/// stale_epoch() is true) or the token's grant expired, was released or
/// revoked (LS002). Nothing of the transaction was committed.
class fence_rejected : public lease_lost {
public:
    using lease_lost::lease_lost;

    /// True for LS001: another holder was granted a newer epoch.
    [[nodiscard]] bool stale_epoch() const noexcept { return sqlstate() == "LS001"; }
};

/// A takeover ended this fenced transaction: the lease ran out (held() was
/// false, past the local deadline, when the failure arrived), another holder
/// was granted it, and the server ended the transaction that still held the
/// old epoch's fence lock (pg_lease.takeover_timeout). A session idle in
/// the transaction is terminated (sqlstate() 57P01, or empty when the client
/// only saw the connection close), a running statement is cancelled (57014).
/// Nothing of the transaction was committed; the session of a terminated
/// transaction is gone (the pqxx connection must be reopened).
///
/// The same failures while the lease is still held locally are not an
/// eviction: a broken connection is connection_lost, a cancelled statement
/// stays a plain error.
class lease_evicted : public lease_lost {
public:
    using lease_lost::lease_lost;
};

/// The connection to the server broke (or the server closed it, or none
/// could be made). From run_fenced(): before COMMIT was sent, so nothing
/// was committed and retrying is safe. From a lease call (acquire, renew,
/// release: one autocommit statement each), the statement may have
/// committed before its reply was lost; the lease resolves that without
/// guessing: acquiring again with the same identity returns the same epoch
/// while that grant is unexpired, a renew of unknown outcome never moves
/// the local deadline (it counts from the last renew known to succeed), and
/// a release of unknown outcome leaves the grant to expire.
class connection_lost : public error {
public:
    using error::error;
};

/// The connection broke while COMMIT was in flight: the transaction may or
/// may not have committed. Check the database before retrying.
class commit_unknown : public error {
public:
    using error::error;
};

/// Builds the pglease exception for a server error: @p sqlstate selects the
/// type (LS001/LS002 fence_rejected, LS003 missing_token, 22023/22004
/// invalid_argument, 42501 permission_denied, class 08 and 57P01..57P03
/// connection_lost, anything else error) and throws it.
[[noreturn]] void throw_for_sqlstate(const std::string& what, const std::string& sqlstate);

/// True when @p sqlstate says the session is gone (class 08, admin shutdown,
/// crash shutdown, cannot connect now): the connection must be replaced.
[[nodiscard]] bool is_connection_sqlstate(const std::string& sqlstate) noexcept;

} // namespace pglease
