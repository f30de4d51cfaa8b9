#!/usr/bin/env bash
# failure_digest.sh BUILD_DIR: for each test the last ctest run failed, the
# lines that say why (a GoogleTest failure and its message, a script's
# "FAIL"/"error", a timeout), so the end of the test command's output names
# them: CI keeps only the head and the tail of a long run's output.
set -euo pipefail
log=$1/Testing/Temporary/LastTest.log
[ -f "$log" ] || exit 0
awk '
	/^[0-9]+\/[0-9]+ Testing: / { name = $3; n = 0; t = 0; delete buf; delete tail; next }
	name != "" && /^(Command|Directory): / { next }
	name != "" && /^Test time = / { time = $0; next }
	/^Test Passed\./ { name = ""; next }
	/^Test Failed\./ {
		if (name != "") {
			print "---- " name " failed:"
			for (i = 1; i <= n && i <= 40; i++) print "  " buf[i]
			if (n == 0) {
				# no failure line (a timeout, a crash): its last lines
				print "  (no failure line; " time "; its last lines:)"
				for (i = (t > 8 ? t - 7 : 1); i <= t; i++) print "  " tail[i]
			}
			if (n > 40) print "  ... " (n - 40) " more"
		}
		name = ""; next
	}
	name != "" && !/^-+$/ && !/^<end of output>$/ { tail[++t] = $0 }
	name != "" && (/Failure$|^\[  FAILED  \]|FAIL|[Ee]rror[: ]|[Tt]imeout|timed out|Expected|Which is|Value of|Actual:|not ok/) {
		buf[++n] = $0
		# a GoogleTest failure: its message is on the next lines
		if ($0 ~ /Failure$/) { for (j = 0; j < 4 && (getline line) > 0; j++) buf[++n] = line }
	}
' "$log"
