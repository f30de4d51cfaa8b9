/// @file conninfo_text.hpp
/// @brief libpq connection strings as key=value settings, read with
/// libpq's own parser and written back quoted: how the library adds its
/// settings to yours, and how `pglease` builds one from -d/-h/-p/-U.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace pglease::conninfo_text {

/// The settings @p conninfo (key=value or URI) gives, by libpq's parser;
/// nullopt with libpq's message (trailing blanks cut) in @p error when it
/// cannot be parsed.
[[nodiscard]] std::optional<std::map<std::string, std::string>> parse(const std::string& conninfo,
                                                                      std::string& error);

/// Quotes @p value for a key=value connection string ('...' with \ escapes).
[[nodiscard]] std::string quote(std::string_view value);

/// "key='value' ..." in key order; empty for no settings.
[[nodiscard]] std::string join(const std::map<std::string, std::string>& settings);

} // namespace pglease::conninfo_text
