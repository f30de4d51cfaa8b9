#!/usr/bin/env bash
# The installed headers (the public ones, testing/ and internal/) compile on
# their own, each, and all together as C++17 and as C++20, with GCC and
# with clang, against the system's libpqxx (6.4) and 7.10
# (scripts/libpqxx.sh), warnings as errors. libpqxx 8 (C++20, clang-16 with
# libc++) compiles them in its platform build.
#
#   tests/platforms/headers.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/server/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

headers=()
for h in "$root"/client/include/pglease/{,testing/,internal/}*.hpp; do
	[ -f "$h" ] && headers+=("${h#"$root"/client/include/}")
done
for h in "${headers[@]}"; do echo "#include <$h>"; done >"$work/all.cpp"
echo "int main() {}" >>"$work/all.cpp"

flags=(-fsyntax-only -Wall -Wextra -Wpedantic -Werror -I "$root/client/include" -I "$(pg_config --includedir)")
pqxx710=$("$root/scripts/libpqxx.sh" 7.10.7)

# Each header alone (what a user including just that one gets).
alone=0
for h in "${headers[@]}"; do
	echo "#include <$h>" >"$work/one.cpp"
	g++ -std=c++17 "${flags[@]}" "$work/one.cpp" 2>"$work/one.log" || { cat "$work/one.log" >&2; echo "alone: $h" >&2; alone=1; }
done
check "each of the ${#headers[@]} installed headers compiles on its own (g++, C++17, libpqxx 6.4)" test "$alone" -eq 0

for cxx in g++ clang++; do
	for std in 17 20; do
		check "all installed headers: $cxx, C++$std, libpqxx 6.4" \
			"$cxx" -std=c++$std "${flags[@]}" "$work/all.cpp"
		check "all installed headers: $cxx, C++$std, libpqxx 7.10" \
			"$cxx" -std=c++$std "${flags[@]}" -I "$pqxx710/include" "$work/all.cpp"
	done
done
finish
