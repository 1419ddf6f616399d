#!/usr/bin/env bash
# Runs each fuzz target given as PKG:NAME for FUZZTIME (make fuzz).
#
# Go 1.26's fuzz coordinator can fail a run with a bare "context deadline
# exceeded" when a -fuzztime duration ends (golang/go#75804, fixed in Go
# 1.27): no input failed and none is written. The slower a target's calls,
# the likelier it is. Such a run is run again with a count of calls
# (-fuzztime Nx, N the calls the first run made) in place of the duration:
# a count sets no deadline, so the race cannot recur, and the second run
# does as much work as the first. Any other failure, or a failing input
# written to testdata/fuzz, fails at once.
set -uo pipefail
# The targets that write savepoints need no durability: without fsyncs they
# run many times more inputs.
export CLINK_STATE_FSYNC=0
go=${GO:-go}
fuzztime=${FUZZTIME:-60s}
for t in "$@"; do
	pkg=${t%%:*}
	name=${t##*:}
	budget=$fuzztime
	for attempt in 1 2; do
		echo "fuzz $pkg $name ($budget)"
		log=$(mktemp)
		"$go" test "$pkg" -run '^$' -fuzz "^$name\$" -fuzztime "$budget" -fuzzminimizetime 1s 2>&1 | tee "$log"
		rc=${PIPESTATUS[0]}
		if [ "$rc" -eq 0 ]; then
			rm -f "$log"
			break
		fi
		if [ "$attempt" -eq 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
			calls=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
			budget="$(( ${calls:-0} > 100 ? ${calls:-0} : 100 ))x"
			echo "fuzz $name: the run ended with a bare 'context deadline exceeded' and no failing input (golang/go#75804); running it again for $budget calls"
			rm -f "$log"
			continue
		fi
		rm -f "$log"
		exit "$rc"
	done
done
