#!/usr/bin/env bash
# Interop: check sptool's outputs with readers that share no code with it.
#
#   ./interop/run.sh            (make interop; make ci runs it when this file is executable)
#
# 1. Installs the pinned npm packages (package-lock.json) into interop/node_modules
#    when missing, and builds bin/sptool when it is missing or older than the Go sources.
# 2. Generates outputs with sptool into a temporary directory:
#      - `sptool apply` of every examples/rules/*.yaml to testdata/example;
#      - every testdata/independent tree rewritten (a set_version rule touches every
#        file, so every file is re-encoded; changelog+file stays changelog+file), and
#        mixed-p4 with a GDPR purge;
#      - the clink fixture rewritten as a plain file and, whole-file compressed,
#        as gzip and (when the zstd tool is installed) zstd;
#      - Parquet exports (canonical, canonical --per-file, query) of every tree, with
#        `sptool inspect --json` and a JSONL export beside them.
#    (sptool's writer never compresses record-batch bodies, so there is no
#    body-compressed output to check; check-arrow can read one anyway.)
# 3. check-arrow.mjs: apache-arrow (JS) reads every .snap file written and every
#    materialisation, checks schema, nullability, metadata order and rows against
#    `sptool cat --format jsonl`.
# 4. check-duckdb.mjs: DuckDB reads the Parquet exports and answers the "state as
#    data" queries (live keys joined to a reference table, key-group skew, rows
#    per slot), compared with `sptool inspect --json` and with its own FNV-1a.
# Each script ends with a PASS/FAIL line; any mismatch exits non-zero.
#
# INTEROP_KEEP=1 keeps the temporary directory; SPTOOL=path uses another binary.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"

command -v node >/dev/null || { echo "interop: node (20 or later) is required" >&2; exit 1; }
if [ ! -d "$here/node_modules/apache-arrow" ] || [ ! -d "$here/node_modules/@duckdb/node-api" ] || [ ! -d "$here/node_modules/fzstd" ]; then
	echo "== npm ci (interop/node_modules)"
	(cd "$here" && npm ci --no-audit --no-fund)
fi

sptool="${SPTOOL:-$root/bin/sptool}"
if [ -z "${SPTOOL:-}" ]; then
	if [ ! -x "$sptool" ] || [ -n "$(find "$root" -name '*.go' -newer "$sptool" -not -path '*/node_modules/*' -print -quit)" ]; then
		echo "== go build -o bin/sptool ./cmd/sptool"
		go build -o "$sptool" ./cmd/sptool
	fi
fi
export SPTOOL_BIN="$sptool"
export CLINK_STATE_FSYNC="${INTEROP_FSYNC:-0}"

work="$(mktemp -d "${TMPDIR:-/tmp}/sptool-interop.XXXXXX")"
if [ "${INTEROP_KEEP:-}" = "1" ]; then
	echo "== outputs kept in $work"
else
	trap 'rm -rf "$work"' EXIT
fi
snap="$work/snap"
pq="$work/parquet"
mkdir -p "$snap" "$pq" "$work/in"

run() { "$sptool" "$@" >"$work/last.out" 2>"$work/last.err" || { echo "interop: sptool $* failed:" >&2; cat "$work/last.err" >&2; exit 1; }; }

echo "== sptool apply: examples/rules/*.yaml on testdata/example"
for r in examples/rules/*.yaml; do
	name="$(basename "$r" .yaml)"
	run apply -r "$r" testdata/example -o "$snap/example-$name"
	echo "   $name"
done

cat >"$work/rewrite.yaml" <<'EOF'
version: 1
rules:
  - name: touch every file (the version map is stamped into each one)
    set_version: {op: 4242, state_type: interop_check, version: 1}
EOF
cat >"$work/purge.yaml" <<'EOF'
version: 1
slots:
  - {op: 9978822733527292523, slot: profile, key: string}
rules:
  - purge_keys: {keys: [user-514, user-569, user-1067], codec: string}
EOF

echo "== sptool apply: testdata/independent trees rewritten"
for t in testdata/independent/*/; do
	name="$(basename "$t")"
	run apply -r "$work/rewrite.yaml" "$t" -o "$snap/indep-$name"
	echo "   $name"
done
run apply -r "$work/purge.yaml" testdata/independent/mixed-p4 -o "$snap/indep-mixed-p4-purged"
echo "   mixed-p4 (purge)"

echo "== sptool apply: the clink fixture, plain and whole-file compressed"
run apply -r "$work/rewrite.yaml" testdata/clink/snapshot-v1.snap -o "$snap/fixture/checkpoint-7.snap"
gzip -c testdata/clink/snapshot-v1.snap >"$work/in/snapshot-v1.snap.gz"
run apply -r "$work/rewrite.yaml" "$work/in/snapshot-v1.snap.gz" -o "$snap/fixture-gzip/checkpoint-7.snap.gz"
if command -v zstd >/dev/null; then
	zstd -q -c testdata/clink/snapshot-v1.snap >"$work/in/snapshot-v1.snap.zst"
	run apply -r "$work/rewrite.yaml" "$work/in/snapshot-v1.snap.zst" -o "$snap/fixture-zstd/checkpoint-7.snap.zst"
else
	echo "   (zstd not installed: no zstd-compressed output)"
fi

cat >"$work/example-slots.yaml" <<'EOF'
version: 1
slots:
  - {uid: agg, slot: counts, key: int64, value: int64}
  - {uid: agg, slot: seen, key: string, value: string, ttl: true}
  - {uid: enricher, slot: profile, key: string, value: string}
  - {uid: enricher, slot: cart, key: string, value: int64, ttl: true, composite: true}
rules: []
EOF

echo "== sptool export / inspect: Parquet of every tree"
export_tree() { # name path [rules]
	local name="$1" path="$2" rules="${3:-}"
	run export "$path" -o "$pq/$name.canonical.parquet"
	run export "$path" -o "$pq/$name.per-file.parquet" --per-file --compression zstd
	if [ -n "$rules" ]; then
		run export "$path" -o "$pq/$name.query.parquet" --projection query --rules "$rules"
		run export "$path" -o "$pq/$name.jsonl" --rules "$rules"
	else
		run export "$path" -o "$pq/$name.query.parquet" --projection query
		run export "$path" -o "$pq/$name.jsonl"
	fi
	"$sptool" inspect --json "$path" >"$pq/$name.inspect.json"
	echo "   $name"
}
export_tree example testdata/example "$work/example-slots.yaml"
for t in testdata/independent/*/; do
	export_tree "$(basename "$t")" "$t"
done
export_tree clink-fixture testdata/clink/snapshot-v1.snap
export_tree example-gdpr "$snap/example-gdpr-erasure"

echo "== check-arrow: apache-arrow reads what sptool wrote"
node "$here/check-arrow.mjs" "$snap"
echo "== check-duckdb: DuckDB over the Parquet exports"
node "$here/check-duckdb.mjs" "$pq"
