#!/usr/bin/env bash
# Builds one libFuzzer target with clang (ASan + UBSan) and runs it for a
# bounded time over its corpus in tests/fuzz/corpus/<target>.
#
#   tests/fuzz/run.sh TARGET [SECONDS]      # default 20 s, or FUZZ_SECONDS
#
# New inputs that libFuzzer finds go to a scratch directory; with
# FUZZ_MERGE=1 the ones that add coverage are merged into the corpus.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=$1
seconds=${2:-${FUZZ_SECONDS:-20}}
work=$(mktemp -d /tmp/pg_lease_fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT

flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
cxx=(clang++ -std=c++17 "${flags[@]}" -I"$root/client/include" -I"$root/client/src")
case "$target" in
	epoch_list)
		clang "${flags[@]}" -I"$root/extension" "$here/fuzz_epoch_list.c" \
			"$root/extension/epoch_list.c" -o "$work/fuzz" ;;
	event_payload)
		"${cxx[@]}" "$here/fuzz_event_payload.cpp" "$root/client/src/pq/event_payload.cpp" -o "$work/fuzz" ;;
	conninfo)
		"${cxx[@]}" -I"$(pg_config --includedir)" "$here/fuzz_conninfo.cpp" \
			"$root/client/src/pq/conninfo.cpp" "$root/client/src/pq/conninfo_text.cpp" "$root/client/src/engine/error.cpp" -lpq -o "$work/fuzz" ;;
	cli_duration)
		"${cxx[@]}" -I"$root/client/cli" "$here/fuzz_cli_duration.cpp" \
			"$root/client/cli/common/duration.cpp" -o "$work/fuzz" ;;
	cli_event)
		"${cxx[@]}" -I"$root/client/cli" "$here/fuzz_cli_event.cpp" \
			"$root/client/cli/status/event.cpp" -o "$work/fuzz" ;;
	cli_args)
		"${cxx[@]}" -I"$root/client/cli" -I"$(pg_config --includedir)" "$here/fuzz_cli_args.cpp" \
			"$root"/client/cli/common/{cli_parse,conninfo,duration,http_endpoint}.cpp "$root/client/cli/common/run_plan.cpp" "$root/client/src/pq/conninfo_text.cpp" -lpq -o "$work/fuzz" ;;
	*)
		echo "unknown fuzz target: $target" >&2
		exit 2 ;;
esac

mkdir -p "$work/new"
corpus="$here/corpus/$target"
dict=()
[ -f "$here/$target.dict" ] && dict=(-dict="$here/$target.dict")
"$work/fuzz" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
	"${dict[@]}" "$work/new" "$corpus" 2>&1 | tee "$work/log" | grep -E "^(#[0-9]+ +DONE|==|SUMMARY|stat::number_of_executed_units|stat::average_exec_per_sec)" || true
grep -q "Done [0-9]* runs" "$work/log" || { tail -40 "$work/log"; exit 1; }
if [ -n "${FUZZ_MERGE:-}" ]; then
	# keep what added coverage: the committed corpus grows, minimally
	"$work/fuzz" -merge=1 "$corpus" "$work/new" >/dev/null 2>&1
fi
echo "fuzz $target: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$work/log")"
