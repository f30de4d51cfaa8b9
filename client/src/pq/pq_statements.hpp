/// @file pq_statements.hpp
/// @brief The SQL of every statement pq_backend sends, built once per
/// backend (its schema never changes), each with the name it is prepared
/// under: no text is assembled or hashed per call.
#pragma once

#include <string>

namespace pglease::detail {

/// One statement: its text and the name a session prepares it under.
struct statement {
    /// How often a session sends it: a prepared statement costs a Parse
    /// round trip before its first execution, an unnamed one none.
    enum class use {
        often, ///< prepared once per session, then Bind and Execute
        once,  ///< about once a term (a handover, the read that confirms
               ///< one): sent unnamed, one round trip on a handover's path
    };
    explicit statement(std::string text, use how = use::often);

    std::string sql;
    use how;
    /// "pglease_" and the FNV-1a hash of sql: the same name for the same
    /// text in every client, so a statement another session left prepared
    /// on a pooled server connection is this one.
    std::string name;
};

/// pq_backend's statements, calling the functions in @p schema (quoted;
/// empty: unqualified, found by the session's search_path).
struct pq_statements {
    explicit pq_statements(const std::string& schema);

    statement acquire;
    /// acquire with a lock delay: the four-argument lease_acquire (1.1+).
    statement acquire_delayed;
    statement renew;
    statement release;
    statement revoke;
    statement handover;
    statement status;
    /// status, only where a visible commit is a durable one (no synchronous
    /// standby, whose cancelled wait would show a commit not replicated)
    statement status_if_durable;
    statement list;
    statement renew_many;
    statement acquire_many;
    statement acquire_many_delayed;
    statement release_many;
    statement store_id;
    /// "SELECT <schema>.lease_raise": sent with its arguments as literals,
    /// after a SET LOCAL statement_timeout in the same message (see raise()).
    std::string raise_call;
};

} // namespace pglease::detail
