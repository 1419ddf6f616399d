#!/usr/bin/env bash
# Runs each fuzz target given as PKG:NAME for FUZZTIME (make fuzz).
#
# Go 1.26's fuzz coordinator can fail a run with a bare "context deadline
# exceeded" when -fuzztime ends while a worker is mid-call (golang/go#75804,
# fixed in Go 1.27): no input failed and none is written. Such a run is
# retried once; any other failure, or a failing input written to
# testdata/fuzz, fails at once.
set -uo pipefail
# The targets that write savepoints need no durability: without fsyncs they
# run many times more inputs.
export CLINK_STATE_FSYNC=0
go=${GO:-go}
fuzztime=${FUZZTIME:-60s}
for t in "$@"; do
	pkg=${t%%:*}
	name=${t##*:}
	for attempt in 1 2; do
		echo "fuzz $pkg $name ($fuzztime)"
		log=$(mktemp)
		"$go" test "$pkg" -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -fuzzminimizetime 1s 2>&1 | tee "$log"
		rc=${PIPESTATUS[0]}
		if [ "$rc" -eq 0 ]; then
			rm -f "$log"
			break
		fi
		if [ "$attempt" -eq 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
			echo "fuzz $name: the run ended with a bare 'context deadline exceeded' and no failing input (golang/go#75804); running it again"
			rm -f "$log"
			continue
		fi
		rm -f "$log"
		exit "$rc"
	done
done
