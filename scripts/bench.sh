#!/usr/bin/env bash
# make bench: sptool against cp on generated savepoints, in one run.
#
# For each size it generates a snapshot in canonical order (as sptool writes
# and RocksDB exports), and at 10M rows also one in clink's hash-map order
# (shuffled) and a 4-subtask tree, then times each operation and its peak
# resident memory next to `cp` of the same input. Ratios are what to
# compare: absolute times drift between machines and with load.
#
#   BENCH_SIZES="1000000 10000000 30000000"  sizes in rows
#   BENCH_DIR=/tmp/sptool-bench               where inputs and outputs go
#   BENCH_KEEP=1                              keep the generated inputs
#   BENCH_LARGE=1                             also a snapshot whose key column passes 2 GiB
#                                             (about 2.7 GB on disk), processed in bounded memory
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${BENCH_SIZES:-"1000000 10000000 30000000"}
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/sptool-bench}
BIN=$PWD/bin/sptool
export CLINK_STATE_FSYNC=${CLINK_STATE_FSYNC:-0} # measure the work, not the disk's fsync
mkdir -p "$DIR"
go build -o "$BIN" ./cmd/sptool
go build -o "$DIR/spgen" ./internal/gen/spgen

cat > "$DIR/drop.yaml" <<'EOF'
version: 1
rules:
  - drop: 'key_group < 64 && slot == "agg"'
EOF
# 100,000 int64 user keys spread over the key space (every 7th key).
awk 'BEGIN { for (i = 0; i < 100000; i++) print i * 7 }' > "$DIR/keys.txt"
cat > "$DIR/purge.yaml" <<'EOF'
version: 1
rules:
  - purge_keys: {keys_file: keys.txt, codec: int64}
EOF
# No rules: plan reads and checks every row and writes nothing (the read path).
printf 'version: 1\nrules: []\n' > "$DIR/read.yaml"

# measure LABEL CMD...: prints "seconds peak_kb"
measure() {
	if ! /usr/bin/time -o "$DIR/time.out" -f "%e %M" "$@" >/dev/null 2>"$DIR/stderr.out"; then
		echo "FAILED: $* ($(tail -1 "$DIR/stderr.out"))" >&2
		echo "0 0"
		return
	fi
	tail -1 "$DIR/time.out"
}

row() { # name seconds kb cp_seconds input_bytes
	awk -v n="$1" -v s="$2" -v k="$3" -v c="$4" -v b="$5" 'BEGIN {
		r = (c > 0) ? s / c : 0
		printf "| %-34s | %8.2f | %7.1fx | %8.0f | %5.2f |\n", n, s, r, k / 1024, (k * 1024) / b
	}'
}

header() {
	echo
	echo "### $1"
	echo
	echo "| operation | seconds | vs cp | peak MB | peak / input |"
	echo "|---|---:|---:|---:|---:|"
}

bench_file() { # label path
	local label=$1 in=$2 bytes cp_s
	bytes=$(stat -c %s "$in")
	read -r cp_s cp_kb < <(measure cp "$in" "$DIR/copy.snap")
	rm -f "$DIR/copy.snap"
	read -r cat_s cat_kb < <(measure sh -c 'cat "$1" > /dev/null' sh "$in")
	header "$label ($(numfmt --to=iec "$bytes")B)"
	row "cp" "$cp_s" "$cp_kb" "$cp_s" "$bytes"
	row "cat > /dev/null" "$cat_s" "$cat_kb" "$cp_s" "$bytes"
	read -r s kb < <(measure "$BIN" plan -r "$DIR/read.yaml" "$in")
	row "read every row (plan, no rules)" "$s" "$kb" "$cp_s" "$bytes"
	for op in inspect validate; do
		read -r s kb < <(measure "$BIN" "$op" "$in")
		row "sptool $op" "$s" "$kb" "$cp_s" "$bytes"
	done
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb < <(measure "$BIN" apply -r "$DIR/drop.yaml" "$in" -o "$DIR/out.snap")
	row "apply drop (expression)" "$s" "$kb" "$cp_s" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb < <(measure "$BIN" apply -r "$DIR/purge.yaml" "$in" -o "$DIR/out.snap")
	row "apply purge_keys (100,000 keys)" "$s" "$kb" "$cp_s" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	rm -f "$DIR/out.parquet"
	read -r s kb < <(measure "$BIN" export "$in" -o "$DIR/out.parquet" --format parquet)
	row "export parquet" "$s" "$kb" "$cp_s" "$bytes"
	rm -f "$DIR/out.parquet"
}

bench_large() { # a key column over 2 GiB: the writer splits batches, memory stays bounded
	local in="$DIR/large.snap" bytes cp_s
	[ -f "$in" ] || "$DIR/spgen" big "$in" 20000000 --sorted --key-pad 104
	bytes=$(stat -c %s "$in")
	read -r cp_s cp_kb < <(measure cp "$in" "$DIR/copy.snap")
	rm -f "$DIR/copy.snap"
	header "20000000 rows with 120-byte keys: the key column passes 2 GiB ($(numfmt --to=iec "$bytes")B)"
	row "cp" "$cp_s" "$cp_kb" "$cp_s" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb < <(measure "$BIN" apply -r "$DIR/drop.yaml" "$in" -o "$DIR/out.snap")
	row "apply drop (expression)" "$s" "$kb" "$cp_s" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb < <(measure "$BIN" apply -r "$DIR/purge.yaml" "$in" -o "$DIR/out.snap")
	row "apply purge_keys (100,000 keys)" "$s" "$kb" "$cp_s" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta" "$in"
}

bench_tree() { # label dir
	local label=$1 in=$2 bytes cp_s
	bytes=$(du -sb "$in" | cut -f1)
	read -r cp_s cp_kb < <(measure cp -r "$in" "$DIR/copy-tree")
	rm -rf "$DIR/copy-tree"
	header "$label ($(numfmt --to=iec "$bytes")B)"
	row "cp -r" "$cp_s" "$cp_kb" "$cp_s" "$bytes"
	for op in inspect validate; do
		read -r s kb < <(measure "$BIN" "$op" "$in")
		row "sptool $op" "$s" "$kb" "$cp_s" "$bytes"
	done
	rm -rf "$DIR/out-tree"
	read -r s kb < <(measure "$BIN" apply -r "$DIR/drop.yaml" "$in" -o "$DIR/out-tree")
	row "apply drop (expression)" "$s" "$kb" "$cp_s" "$bytes"
	rm -rf "$DIR/out-tree"
	read -r s kb < <(measure "$BIN" rescale "$in" -o "$DIR/out-tree" --parallelism 7)
	row "rescale 4 -> 7" "$s" "$kb" "$cp_s" "$bytes"
	rm -rf "$DIR/out-tree"
}

echo "## sptool benchmarks"
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1 /proc/loadavg) at start"

for n in $SIZES; do
	f="$DIR/sorted-$n.snap"
	[ -f "$f" ] || "$DIR/spgen" big "$f" "$n" --sorted
	bench_file "$n rows, canonical order" "$f"
	if [ "$n" = 10000000 ]; then
		u="$DIR/shuffled-$n.snap"
		[ -f "$u" ] || "$DIR/spgen" big "$u" "$n"
		bench_file "$n rows, clink's hash-map order (shuffled)" "$u"
		t="$DIR/tree-$n"
		[ -d "$t" ] || "$DIR/spgen" bigtree "$t" "$n" 4
		bench_tree "$n rows in a 4-subtask tree" "$t"
	fi
done
[ -z "${BENCH_LARGE:-}" ] || bench_large
[ -n "${BENCH_KEEP:-}" ] || rm -rf "$DIR"
