#!/usr/bin/env bash
# make bench: sptool against cp on generated savepoints, in one run.
#
# For each size it generates a snapshot in canonical order (as sptool writes
# and RocksDB exports), and at 10M rows also one in clink's hash-map order
# (shuffled), 4-subtask trees in both orders, 16-subtask trees in clink's
# order (one of them with a 50 MB broadcast state in every file) and, where
# the zstd command is present, the sorted file compressed whole with zstd
# (next to zstd's own decompression), then times each operation and its peak
# resident memory next to `cp` of the same input. Ratios are what to
# compare: absolute times drift between machines and with load.
#
#   BENCH_SIZES="1000000 10000000 30000000"  sizes in rows
#   BENCH_DIR=/tmp/sptool-bench               where inputs and outputs go
#   BENCH_KEEP=1                              keep the generated inputs
#   BENCH_LARGE=1                             also a snapshot whose key column passes 2 GiB
#                                             (about 2.7 GB on disk) and a tree of three such
#                                             files (about 8.5 GB), processed in bounded memory;
#                                             BENCH_SIZES=" " BENCH_LARGE=1 runs those alone
#   BENCH_PEERS=0                             skip the peer (nodejs-polars, installed with npm
#                                             into scripts/peers) that runs the same filter
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${BENCH_SIZES:-"1000000 10000000 30000000"}
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}/sptool-bench}
BIN=$PWD/bin/sptool
export CLINK_STATE_FSYNC=${CLINK_STATE_FSYNC:-0} # measure the work, not the disk's fsync
mkdir -p "$DIR"
CGO_ENABLED=0 go build -o "$BIN" ./cmd/sptool # as make build
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
# The filter the peer runs too: keep the rows whose key starts with a byte below 64.
printf "version: 1\nrules:\n  - keep: 'key_group < 64'\n" > "$DIR/keep.yaml"

PEER=""
if [ "${BENCH_PEERS:-1}" != 0 ] && command -v node >/dev/null && command -v npm >/dev/null; then
	if [ -d scripts/peers/node_modules/nodejs-polars-linux-x64-gnu ] || npm install --prefix scripts/peers --no-save --no-audit --no-fund --loglevel=error >/dev/null 2>&1; then
		PEER="node scripts/peers/polars-filter.mjs"
	else
		echo "note: npm could not install nodejs-polars; the peer rows are left out" >&2
	fi
fi

# growth NAME SIZE VALUE KB: remembered for the table of growth at the end.
declare -A GROWTH_S GROWTH_KB
growth() { GROWTH_S["$1,$2"]=$3; GROWTH_KB["$1,$2"]=$4; }

# measure CMD...: prints "seconds peak_kb ratio": the best wall time of
# BENCH_REPEAT runs (default 3; this kind of machine is noisy), to the
# microsecond from the shell's clock, the highest peak resident memory
# (time(1)), and the median over the runs of the run's time over that of
# the copy of the same input (the command in BASE) run just before it. The
# speed of these machines drifts by a third over minutes: a ratio of two
# runs seconds apart drifts far less than the ratio of two best times
# taken minutes apart. Before each run the outputs of earlier runs are
# removed and dirty pages are written back (sync), so that no run pays for
# another's.
BASE=()
measure() {
	local t0 t1 b0 b1 best="" peak=0 kb ratios=()
	for ((r = 0; r < ${BENCH_REPEAT:-3}; r++)); do
		rm -rf "$DIR/copy.snap" "$DIR/copy-tree" "$DIR/out.snap" "$DIR/out.snap.meta" "$DIR/out.parquet" "$DIR/out.arrow" "$DIR/out-tree"
		sync
		if ((${#BASE[@]})); then
			b0=$EPOCHREALTIME
			"${BASE[@]}" >/dev/null 2>&1
			b1=$EPOCHREALTIME
			rm -rf "$DIR/copy.snap" "$DIR/copy-tree"
			sync
		fi
		t0=$EPOCHREALTIME
		if ! /usr/bin/time -o "$DIR/time.out" -f "%M" "$@" >/dev/null 2>"$DIR/stderr.out"; then
			echo "FAILED: $* ($(tail -1 "$DIR/stderr.out"))" >&2
			echo "0 0 0"
			return
		fi
		t1=$EPOCHREALTIME
		kb=$(tail -1 "$DIR/time.out")
		best=$(awk -v a="$t0" -v b="$t1" -v best="$best" 'BEGIN { t = b - a; if (best != "" && best < t) t = best; printf "%.6f", t }')
		((kb > peak)) && peak=$kb
		((${#BASE[@]})) && ratios+=("$(awk -v a="$t0" -v b="$t1" -v c="$b0" -v d="$b1" 'BEGIN { printf "%.4f", (b - a) / (d - c) }')")
	done
	local ratio=1
	((${#ratios[@]})) && ratio=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	printf "%.3f %d %s\n" "$best" "$peak" "$ratio"
}

row() { # name seconds kb ratio input_bytes
	awk -v n="$1" -v s="$2" -v k="$3" -v r="$4" -v b="$5" 'BEGIN {
		printf "| %-34s | %8.3f | %7.1fx | %8.0f | %5.2f |\n", n, s, r, k / 1024, (k * 1024) / b
	}'
}

header() {
	echo
	echo "### $1"
	echo
	echo "| operation | seconds | vs cp | peak MB | peak / input |"
	echo "|---|---:|---:|---:|---:|"
}

bench_reads() { # path bytes: the rows of inspect and validate
	local s kb q
	for op in inspect validate; do
		read -r s kb q < <(measure "$BIN" "$op" "$1")
		row "sptool $op" "$s" "$kb" "$q" "$2"
	done
}

bench_file() { # label path [size, for the growth table] [keep: also apply --keep-order]
	local label=$1 in=$2 size=${3:-} keep=${4:-} bytes cp_s
	bytes=$(stat -c %s "$in")
	BASE=()
	read -r cp_s cp_kb _ < <(measure cp "$in" "$DIR/copy.snap")
	BASE=(cp "$in" "$DIR/copy.snap")
	rm -f "$DIR/copy.snap"
	read -r cat_s cat_kb cat_q < <(measure sh -c 'cat "$1" > /dev/null' sh "$in")
	header "$label ($(numfmt --to=iec "$bytes")B)"
	row "cp" "$cp_s" "$cp_kb" 1 "$bytes"
	row "cat > /dev/null" "$cat_s" "$cat_kb" "$cat_q" "$bytes"
	read -r s kb q < <(measure "$BIN" plan -r "$DIR/read.yaml" "$in")
	row "read every row (plan, no rules)" "$s" "$kb" "$q" "$bytes"
	[ -z "$size" ] || growth read "$size" "$(awk -v q="$q" 'BEGIN { printf "%.1f", q }')" "$kb"
	bench_reads "$in" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb q < <(measure "$BIN" apply -r "$DIR/drop.yaml" "$in" -o "$DIR/out.snap")
	row "apply drop (expression)" "$s" "$kb" "$q" "$bytes"
	[ -z "$size" ] || growth drop "$size" "$(awk -v q="$q" 'BEGIN { printf "%.1f", q }')" "$kb"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb q < <(measure "$BIN" apply -r "$DIR/purge.yaml" "$in" -o "$DIR/out.snap")
	row "apply purge_keys (100,000 keys)" "$s" "$kb" "$q" "$bytes"
	[ -z "$size" ] || growth purge "$size" "$(awk -v q="$q" 'BEGIN { printf "%.1f", q }')" "$kb"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	if [ -n "$keep" ]; then # the rows written in the order stored, not sorted
		read -r s kb q < <(measure "$BIN" apply --keep-order -r "$DIR/drop.yaml" "$in" -o "$DIR/out.snap")
		row "apply drop --keep-order" "$s" "$kb" "$q" "$bytes"
		rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
		read -r s kb q < <(measure "$BIN" apply --keep-order -r "$DIR/purge.yaml" "$in" -o "$DIR/out.snap")
		row "apply purge_keys --keep-order" "$s" "$kb" "$q" "$bytes"
		rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	fi
	rm -f "$DIR/out.parquet"
	read -r s kb q < <(measure "$BIN" export "$in" -o "$DIR/out.parquet" --format parquet)
	row "export parquet" "$s" "$kb" "$q" "$bytes"
	[ -z "$size" ] || growth export "$size" "$s" "$kb"
	rm -f "$DIR/out.parquet"
	if [ -n "$PEER" ]; then
		read -r s kb q < <(measure "$BIN" apply -r "$DIR/keep.yaml" "$in" -o "$DIR/out.snap")
		row "apply keep key_group < 64" "$s" "$kb" "$q" "$bytes"
		rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
		read -r s kb q < <(measure $PEER "$in" "$DIR/out.arrow")
		row "nodejs-polars, the same filter (1)" "$s" "$kb" "$q" "$bytes"
		rm -f "$DIR/out.arrow"
	fi
}

bench_large() { # a key column over 2 GiB: the writer splits batches, memory stays bounded
	local in="$DIR/large.snap" bytes cp_s
	[ -f "$in" ] || "$DIR/spgen" big "$in" 20000000 --sorted --key-pad 104
	bytes=$(stat -c %s "$in")
	BASE=()
	read -r cp_s cp_kb _ < <(measure cp "$in" "$DIR/copy.snap")
	BASE=(cp "$in" "$DIR/copy.snap")
	rm -f "$DIR/copy.snap"
	header "20000000 rows with 120-byte keys: the key column passes 2 GiB ($(numfmt --to=iec "$bytes")B)"
	row "cp" "$cp_s" "$cp_kb" 1 "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb q < <(measure "$BIN" apply -r "$DIR/drop.yaml" "$in" -o "$DIR/out.snap")
	row "apply drop (expression)" "$s" "$kb" "$q" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb q < <(measure "$BIN" apply -r "$DIR/purge.yaml" "$in" -o "$DIR/out.snap")
	row "apply purge_keys (100,000 keys)" "$s" "$kb" "$q" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta" "$in"

	# A tree of three such files (about 8.5 GB): 57M rows, 19M a subtask.
	local t="$DIR/large-tree"
	[ -d "$t" ] || "$DIR/spgen" bigtree "$t" 57000000 3 --key-pad 104
	bytes=$(du -sb "$t" | cut -f1)
	BASE=()
	read -r cp_s cp_kb _ < <(measure cp -r "$t" "$DIR/copy-tree")
	BASE=(cp -r "$t" "$DIR/copy-tree")
	header "57000000 rows with 120-byte keys in a 3-subtask tree, each key column over 2 GiB ($(numfmt --to=iec "$bytes")B)"
	row "cp -r" "$cp_s" "$cp_kb" 1 "$bytes"
	read -r s kb q < <(measure "$BIN" apply -r "$DIR/drop.yaml" "$t" -o "$DIR/out-tree")
	row "apply drop (expression)" "$s" "$kb" "$q" "$bytes"
	read -r s kb q < <(measure "$BIN" rescale "$t" -o "$DIR/out-tree" --parallelism 4)
	row "rescale 3 -> 4" "$s" "$kb" "$q" "$bytes"
	rm -rf "$DIR/copy-tree" "$DIR/out-tree" "$t"
}

bench_compressed() { # label path: a payload compressed as a whole with zstd
	local label=$1 in=$2 bytes dz_s dz_kb
	bytes=$(stat -c %s "$in")
	# The reference is zstd's own decompression to a file: what any reader
	# of the file must do first, as cp is of a plain one.
	BASE=()
	read -r dz_s dz_kb _ < <(measure sh -c 'zstd -q -d -c "$1" > "$2"' sh "$in" "$DIR/copy.snap")
	BASE=(sh -c 'zstd -q -d -c "$1" > "$2"' sh "$in" "$DIR/copy.snap")
	rm -f "$DIR/copy.snap"
	header "$label ($(numfmt --to=iec "$bytes")B; vs zstd -d to a file, not cp)"
	row "zstd -d to a file" "$dz_s" "$dz_kb" 1 "$bytes"
	read -r s kb q < <(measure "$BIN" inspect "$in")
	row "sptool inspect" "$s" "$kb" "$q" "$bytes"
	# validate exits 1: clink restores no payload compressed whole.
	read -r s kb q < <(measure sh -c '"$1" validate "$2" >/dev/null; [ $? -eq 1 ]' sh "$BIN" "$in")
	row "sptool validate (exit 1, as it should)" "$s" "$kb" "$q" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb q < <(measure "$BIN" apply -r "$DIR/drop.yaml" --decompress "$in" -o "$DIR/out.snap")
	row "apply drop --decompress" "$s" "$kb" "$q" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
	read -r s kb q < <(measure "$BIN" apply -r "$DIR/purge.yaml" --decompress "$in" -o "$DIR/out.snap")
	row "apply purge_keys --decompress" "$s" "$kb" "$q" "$bytes"
	rm -f "$DIR/out.snap" "$DIR/out.snap.meta"
}

bench_tree() { # label dir [subtasks]
	local label=$1 in=$2 from=${3:-4} bytes cp_s
	bytes=$(du -sb "$in" | cut -f1)
	BASE=()
	read -r cp_s cp_kb _ < <(measure cp -r "$in" "$DIR/copy-tree")
	BASE=(cp -r "$in" "$DIR/copy-tree")
	rm -rf "$DIR/copy-tree"
	header "$label ($(numfmt --to=iec "$bytes")B)"
	row "cp -r" "$cp_s" "$cp_kb" 1 "$bytes"
	bench_reads "$in" "$bytes"
	rm -rf "$DIR/out-tree"
	read -r s kb q < <(measure "$BIN" apply -r "$DIR/drop.yaml" "$in" -o "$DIR/out-tree")
	row "apply drop (expression)" "$s" "$kb" "$q" "$bytes"
	rm -rf "$DIR/out-tree"
	read -r s kb q < <(measure "$BIN" rescale "$in" -o "$DIR/out-tree" --parallelism 7)
	row "rescale $from -> 7" "$s" "$kb" "$q" "$bytes"
	rm -rf "$DIR/out-tree"
	read -r s kb q < <(measure "$BIN" export "$in" -o "$DIR/out.parquet" --format parquet)
	row "export parquet" "$s" "$kb" "$q" "$bytes"
	rm -f "$DIR/out.parquet"
}

echo "## sptool benchmarks"
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3), load average $(cut -d' ' -f1 /proc/loadavg) at start"
echo
echo "seconds: the best of ${BENCH_REPEAT:-3} runs. vs cp: the median over those runs of the run's time over that of"
echo "cp (cp -r for a tree) of the same input run just before it."

for n in $SIZES; do
	f="$DIR/sorted-$n.snap"
	[ -f "$f" ] || "$DIR/spgen" big "$f" "$n" --sorted
	bench_file "$n rows, canonical order" "$f" "$n"
	if [ "$n" = 10000000 ] && command -v zstd >/dev/null; then
		# An archive's form: the file compressed as a whole (zstd -3).
		z="$DIR/sorted-$n.snap.zst"
		[ -f "$z" ] || zstd -q -3 "$f" -o "$z"
		bench_compressed "$n rows, canonical order, compressed whole with zstd" "$z"
		rm -f "$z"
	fi
	if [ "$n" = 10000000 ]; then
		u="$DIR/shuffled-$n.snap"
		[ -f "$u" ] || "$DIR/spgen" big "$u" "$n"
		bench_file "$n rows, clink's hash-map order (shuffled)" "$u" "" keep
		t="$DIR/tree-$n"
		[ -d "$t" ] || "$DIR/spgen" bigtree "$t" "$n" 4
		bench_tree "$n rows in a 4-subtask tree" "$t"
		# A tree as clink writes it: every file in hash-map order.
		t="$DIR/shuffled-tree-$n"
		[ -d "$t" ] || "$DIR/spgen" bigtree "$t" "$n" 4 --shuffled
		bench_tree "$n rows in a 4-subtask tree, clink's hash-map order" "$t"
		# Files under a million rows each (625K), sorted another way than
		# the 4-subtask tree's (see minSpillRows in transform).
		t="$DIR/shuffled-tree16-$n"
		[ -d "$t" ] || "$DIR/spgen" bigtree "$t" "$n" 16 --shuffled
		bench_tree "$n rows in a 16-subtask tree, clink's hash-map order" "$t" 16
		# Operator state replicated in every file (a broadcast state of
		# 50 MB, as a rules engine's): memory must not grow with the
		# copies.
		t="$DIR/broadcast-tree16"
		[ -d "$t" ] || "$DIR/spgen" bigtree "$t" 1000000 16 --shuffled --broadcast 52428800
		bench_tree "1000000 rows in a 16-subtask tree, clink's hash-map order, a 50 MB broadcast state in every file" "$t" 16
	fi
done
[ -z "${BENCH_LARGE:-}" ] || bench_large

if [ -n "${SIZES// /}" ]; then
echo
echo "### Growth with size (canonical order)"
echo
echo "Each cell: time as a multiple of cp of the same file (vs cp above; export: seconds), and peak MB."
echo
printf "| operation |"
for n in $SIZES; do printf " %s rows |" "$n"; done
echo
printf "|---|"
for n in $SIZES; do printf -- "---:|"; done
echo
for op in read drop purge export; do
	unit="x cp"
	[ "$op" = export ] && unit="s"
	printf "| %s |" "$op"
	for n in $SIZES; do printf " %s %s, %s MB |" "${GROWTH_S[$op,$n]:-?}" "$unit" "$(( ${GROWTH_KB[$op,$n]:-0} / 1024 ))"; done
	echo
done
fi
if [ -n "$PEER" ]; then
	echo
	echo "(1) nodejs-polars $(node -p 'require("./scripts/peers/node_modules/nodejs-polars/package.json").version') reads the stream, filters with SQL (key_bytes < X'40') and writes"
	echo "Arrow IPC. Its output is not a clink snapshot (nullable fields, LargeBinary, no metadata): sptool inspect rejects it."
fi
[ -n "${BENCH_KEEP:-}" ] || rm -rf "$DIR"
