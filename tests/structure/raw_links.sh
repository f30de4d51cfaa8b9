#!/usr/bin/env bash
# Every published figure names its raw file (docs/performance.md, "The rule").
# Fails when
#   - a measured row of a table in README.md (a row with a number and a unit:
#     ms, s, x, %, /s, leases, writes; or a first cell marked *measured:*)
#     links no raw file under results/ that exists;
#   - a link from README.md, CONTRIBUTING.md, docs/*.md or results/**/*.md
#     into results/ names a file that does not exist;
#   - docs/ holds a raw result file (*.txt, *.json, *.csv): those live in
#     results/<date>/.
#
#   tests/structure/raw_links.sh [ROOT]    # ROOT: the repository (default: this one)
#   tests/structure/raw_links.sh --self-test
set -uo pipefail

unit='[0-9]([0-9,.]*[0-9])?[[:space:]]?(ms|s|x|%|/s|leases|writes)([^[:alnum:]_]|$)'

# line_links LINE: the targets of LINE's Markdown links, anchors cut, into
# the array `targets` (no subshells: the check runs beside busy suites).
line_links() {
	local rest=$1 re='\]\(([^)[:space:]]+)\)'
	targets=()
	while [[ $rest =~ $re ]]; do
		targets+=("${BASH_REMATCH[1]%%#*}")
		rest=${rest#*"${BASH_REMATCH[0]}"}
	done
}

# resolve DIR TARGET: TARGET relative to DIR, as a path from the root, in REPLY.
resolve() {
	local dir=$1 target=$2 part
	local -a out=() parts=()
	[ "$dir" = . ] || IFS=/ read -r -a out <<<"$dir"
	IFS=/ read -r -a parts <<<"$target"
	for part in "${parts[@]}"; do
		case $part in
		'' | .) ;;
		..) [ ${#out[@]} -gt 0 ] && unset 'out[${#out[@]}-1]' ;;
		*) out+=("$part") ;;
		esac
	done
	local IFS=/
	REPLY="${out[*]}"
}

check() {
	local root=$1 bad=0 file dir target path n line next ok
	local -a targets=()
	cd "$root" || return 2

	# Links into results/ name files that exist.
	local -a pages=()
	for file in README.md CONTRIBUTING.md docs/*.md; do
		[ -f "$file" ] && pages+=("$file")
	done
	if [ -d results ]; then
		while IFS= read -r file; do pages+=("$file"); done < <(find results -name '*.md' | sort)
	fi
	for file in "${pages[@]}"; do
		dir=${file%/*}
		[ "$dir" = "$file" ] && dir=.
		n=0
		while IFS= read -r line; do
			n=$((n + 1))
			[[ $line == *"]("* ]] || continue
			line_links "$line"
			for target in "${targets[@]}"; do
				case $target in *://*) continue ;; esac
				case $file:$target in results/* | *results*) ;; *) continue ;; esac
				resolve "$dir" "$target"
				path=$REPLY
				case $path in results/*) ;; *) continue ;; esac
				if [ ! -e "$path" ]; then
					echo "$file:$n: links $target, which does not exist ($path)"
					bad=1
				fi
			done
		done <"$file"
	done

	# Measured rows of the README's tables link a raw file that exists.
	if [ -f README.md ]; then
		mapfile -t lines <README.md
		for ((n = 0; n < ${#lines[@]}; n++)); do
			line=${lines[n]}
			[[ $line == '|'* ]] || continue
			[[ $line =~ ^\|[[:space:]:|-]+\|?[[:space:]]*$ ]] && continue # separator
			next=${lines[n + 1]:-}
			[[ $next =~ ^\|[[:space:]:|-]+\|?[[:space:]]*$ ]] && continue # header
			if ! [[ $line =~ $unit ]] && ! [[ $line =~ ^\|[[:space:]]*\*measured:\* ]]; then
				continue
			fi
			ok=0
			line_links "$line"
			for target in "${targets[@]}"; do
				resolve . "$target"
				path=$REPLY
				case $path in results/*.md) continue ;; results/*) ;; *) continue ;; esac
				[ -f "$path" ] && ok=1
			done
			if [ $ok = 0 ]; then
				echo "README.md:$((n + 1)): a measured row links no raw file under results/: ${line:0:100}..."
				bad=1
			fi
		done
	fi

	# docs/ holds no raw result files.
	if [ -d docs ]; then
		while IFS= read -r file; do
			echo "$file: a raw result file in docs/ (it belongs in results/<date>/)"
			bad=1
		done < <(find docs -type f \( -name '*.txt' -o -name '*.json' -o -name '*.csv' \) | sort)
	fi
	return $bad
}

self_test() {
	local tmp fails=0
	tmp=$(mktemp -d /tmp/raw_links_self_test.XXXXXX)
	trap "rm -rf '$tmp'" EXIT
	# case NAME EXPECTED(0 pass, 1 fail): builds $tmp/NAME from the good tree, then edits it.
	good() {
		mkdir -p "$1/docs" "$1/results/2026-01-01"
		echo raw >"$1/results/2026-01-01/run.txt"
		printf '# run\n[run](run.txt)\n' >"$1/results/2026-01-01/README.md"
		cat >"$1/README.md" <<-'EOF'
			| figure | value |
			|---|---|
			| failover p50 | 1.68 s ([raw](results/2026-01-01/run.txt)) |
			| fencing token | epoch |
		EOF
		printf 'See [the run](../results/2026-01-01/run.txt#top).\n' >"$1/docs/perf.md"
	}
	expect() { # NAME WANT
		local out got
		out=$(check "$tmp/$1" 2>&1)
		got=$?
		if [ "$got" != "$2" ]; then
			echo "self-test $1: exit $got, wanted $2"
			echo "$out"
			fails=1
		else
			echo "self-test $1: exit $got as wanted${out:+ (${out%%$'\n'*})}"
		fi
	}
	good "$tmp/good"
	expect good 0
	good "$tmp/row_without_link"
	echo '| handover p50 | 8.1 ms |' >>"$tmp/row_without_link/README.md"
	expect row_without_link 1
	good "$tmp/measured_marker"
	echo '| *measured:* cycles/s, 1 / 16 clients | 186 / 1,052 |' >>"$tmp/measured_marker/README.md"
	expect measured_marker 1
	good "$tmp/row_links_missing_file"
	echo '| renew | 1.14x ([raw](results/2026-01-01/gone.txt)) |' >>"$tmp/row_links_missing_file/README.md"
	expect row_links_missing_file 1
	good "$tmp/row_links_only_a_readme"
	echo '| renew | 1.14x ([runs](results/2026-01-01/README.md)) |' >>"$tmp/row_links_only_a_readme/README.md"
	expect row_links_only_a_readme 1
	good "$tmp/docs_link_missing"
	echo 'Raw: [old](../results/2026-01-02/run.txt).' >>"$tmp/docs_link_missing/docs/perf.md"
	expect docs_link_missing 1
	good "$tmp/raw_file_in_docs"
	echo '{}' >"$tmp/raw_file_in_docs/docs/soak.json"
	expect raw_file_in_docs 1
	return $fails
}

if [ "${1:-}" = --self-test ]; then
	self_test
	exit $?
fi
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
if check "$root"; then
	echo "raw_links: every measured README row and every link into results/ names a file that exists; no raw files in docs/"
else
	exit 1
fi
