// check-duckdb: DuckDB (no code shared with sptool) reads the Parquet
// exports under DIR and answers the "state as data" questions; the answers
// are compared with `sptool inspect --json` and with an FNV-1a key-group
// computation of its own.
//
//   node check-duckdb.mjs DIR
//
// DIR holds, per savepoint NAME (written by run.sh):
//   NAME.canonical.parquet   sptool export (clink's canonical projection, the logical union)
//   NAME.per-file.parquet    sptool export --per-file (every stored row)
//   NAME.query.parquet       sptool export --projection query
//   NAME.jsonl               sptool export --format jsonl
//   NAME.inspect.json        sptool inspect --json
// Checks per savepoint:
//   - column types as DuckDB sees them (UBIGINT, UTINYINT, VARCHAR, BLOB, BLOB);
//   - key-group histogram of the live keyed rows (canonical: key_group < 128
//     and slot <> '<raw>'; query: kind = 'keyed') = inspect's key_groups.counts,
//     skew top 5 = the top 5 of inspect's counts;
//   - rows per operator and slot of the per-file export = inspect's stored rows per slot;
//   - rows of the union = lines of the JSONL export, per operator and slot;
//   - the key-value metadata clink.state_versions = inspect's version map;
//   - every keyed row's key_group = FNV-1a-64(user key) % 128 (computed here),
//     for the savepoints whose keys are all stored in their hash's key group;
//   - example only: live keys joined to a reference table (the state-as-data page's query),
//     and the query projection's decoded values against the canonical bytes.
// Prints the example answers of docs/state-as-data.md, one line per check, and a PASS or FAIL
// summary; exits 1 on any mismatch.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

const duckVersion = JSON.parse(readFileSync(new URL('./node_modules/@duckdb/node-api/package.json', import.meta.url), 'utf8')).version;

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node check-duckdb.mjs DIR');
  process.exit(2);
}

// JSON.parse with integers of 16 digits or more kept as strings (op ids exceed 2^53).
const parseBig = (text) => JSON.parse(text.replace(/([:\[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"$2"'));

const con = await (await DuckDBInstance.create(':memory:')).connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJS();
const lit = (p) => `'${p.replaceAll("'", "''")}'`;

// FNV-1a 64 over bytes, % 128: clink's key group (format section 2.2).
function keyGroup(bytes) {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return Number(h % 128n);
}

let checks = 0, failed = 0;
function check(name, ok, detail = '') {
  checks++;
  if (!ok) failed++;
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const names = readdirSync(dir).filter((f) => f.endsWith('.inspect.json')).map((f) => f.slice(0, -'.inspect.json'.length)).sort();
for (const name of names) {
  console.log(`${name}:`);
  const inspect = parseBig(readFileSync(join(dir, `${name}.inspect.json`), 'utf8'));
  const canonical = lit(join(dir, `${name}.canonical.parquet`));
  const perFile = lit(join(dir, `${name}.per-file.parquet`));
  const query = lit(join(dir, `${name}.query.parquet`));

  const types = (await q(`DESCRIBE SELECT * FROM ${canonical}`)).map((r) => `${r.column_name} ${r.column_type}`).join(', ');
  check('canonical columns', types === 'op_id UBIGINT, key_group UTINYINT, slot VARCHAR, user_key BLOB, value_bytes BLOB', types);

  // Key-group histogram of the live keyed rows.
  const want = inspect.key_groups.counts;
  const hist = new Array(128).fill(0);
  for (const r of await q(`SELECT key_group, count(*) AS n FROM ${canonical} WHERE key_group < 128 AND slot <> '<raw>' GROUP BY key_group`)) hist[r.key_group] = Number(r.n);
  check('key-group histogram (canonical) = inspect', same(hist, want), `${hist.reduce((a, b) => a + b, 0)} keyed rows`);
  const histQ = new Array(128).fill(0);
  for (const r of await q(`SELECT key_group, count(*) AS n FROM ${query} WHERE kind = 'keyed' GROUP BY key_group`)) histQ[Number(r.key_group)] = Number(r.n);
  check('key-group histogram (query projection) = inspect', same(histQ, want));
  const top = (await q(`SELECT key_group, count(*) AS n FROM ${canonical} WHERE key_group < 128 AND slot <> '<raw>' GROUP BY key_group ORDER BY n DESC, key_group LIMIT 5`)).map((r) => [r.key_group, Number(r.n)]);
  const wantTop = want.map((n, kg) => [kg, n]).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, 5);
  check('key-group skew top 5 = inspect', same(top, wantTop), top.map(([kg, n]) => `kg ${kg}: ${n}`).join(', '));
  if (top.length) check('max key group = inspect', top[0][0] === inspect.key_groups.max_key_group && top[0][1] === inspect.key_groups.max);

  // Rows per operator and slot, stored view.
  const perSlot = {};
  for (const r of await q(`SELECT op_id, slot, count(*) AS n FROM ${perFile} GROUP BY ALL`)) perSlot[`${r.op_id}/${r.slot}`] = Number(r.n);
  const wantSlot = {};
  for (const op of inspect.operators) for (const s of op.slots) wantSlot[`${op.op}/${s.has_slot ? s.slot : '<raw>'}`] = s.rows;
  const sorted = (o) => Object.fromEntries(Object.entries(o).sort());
  check('rows per slot (per-file export) = inspect', same(sorted(perSlot), sorted(wantSlot)), `${Object.keys(perSlot).length} slots, ${Object.values(perSlot).reduce((a, b) => a + b, 0)} rows`);
  const [{ n: perFileRows }] = await q(`SELECT count(*) AS n FROM ${perFile}`);
  check('stored rows (per-file export) = inspect totals', Number(perFileRows) === inspect.totals.rows, `${perFileRows}`);

  // Rows of the union per operator and slot = the JSONL export's lines.
  const lines = readFileSync(join(dir, `${name}.jsonl`), 'utf8').split('\n').filter(Boolean);
  const jsonSlot = {};
  for (const l of lines) {
    const o = parseBig(l);
    const k = `${o.op}/${o.slot}`;
    jsonSlot[k] = (jsonSlot[k] || 0) + 1;
  }
  const unionSlot = {};
  for (const r of await q(`SELECT op_id, slot, count(*) AS n FROM ${canonical} GROUP BY ALL`)) unionSlot[`${r.op_id}/${r.slot}`] = Number(r.n);
  check('logical rows per slot (canonical) = JSONL export', same(sorted(unionSlot), sorted(jsonSlot)), `${lines.length} rows`);

  // Version map in the key-value metadata.
  const kv = await q(`SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${canonical})`);
  const sv = kv.find((r) => r.k === 'clink.state_versions');
  const wantPacked = inspect.version_map.entries.length ? inspect.version_map.variants.find((v) => v.entries > 0).packed : undefined;
  check('clink.state_versions = inspect version map', (sv && sv.v) === wantPacked, wantPacked === undefined ? 'absent (empty map)' : `${inspect.version_map.entries.length} entries`);

  // Key groups recomputed here: FNV-1a-64 of the user key, for keyed rows.
  const keyed = await q(`SELECT key_group, hex(user_key) AS uk FROM ${canonical} WHERE key_group < 128 AND slot <> '<raw>'`);
  const bad = keyed.filter((r) => keyGroup(Buffer.from(r.uk, 'hex')) !== r.key_group);
  check('key_group = FNV-1a(user key) % 128', bad.length === 0, `${keyed.length} keyed rows${bad.length ? `, ${bad.length} differ (first: ${bad[0].uk} in ${bad[0].key_group})` : ''}`);

  if (name === 'example') {
    // The example queries of docs/state-as-data.md, over the exported state.
    await con.run(`CREATE OR REPLACE TABLE users AS SELECT * FROM (VALUES
      ('user-1', 'alice'), ('user-2', 'bob'), ('user-10', 'carol'), ('user-42', 'dave'),
      ('user-100', 'erin'), ('user-299', 'frank'), ('user-9999', 'ghost')) AS t(user_key, name)`);
    const joined = await q(`SELECT u.name, u.user_key, s.key_group
      FROM users u JOIN ${canonical} s ON s.user_key = encode(u.user_key)
      WHERE s.slot = 'profile' ORDER BY u.name`);
    console.log('  live keys joined to the reference table (DuckDB over the Parquet):');
    for (const r of joined) console.log(`    ${r.name.padEnd(6)} ${r.user_key.padEnd(9)} -> key_group ${r.key_group}`);
    const wantJoin = [['alice', 'user-1'], ['bob', 'user-2'], ['carol', 'user-10'], ['dave', 'user-42'], ['erin', 'user-100'], ['frank', 'user-299']]
      .map(([n, k]) => [n, k, keyGroup(Buffer.from(k))]);
    check('live keys joined to the reference table', same(joined.map((r) => [r.name, r.user_key, r.key_group]), wantJoin), 'user-9999 is not live');
    console.log('  key-group skew (entries per key_group, top 5):');
    for (const [kg, n] of top) console.log(`    key_group ${String(kg).padEnd(3)}: ${n} keys`);
    const rows = await q(`SELECT op_id, slot, count(*) AS n FROM ${canonical} GROUP BY ALL ORDER BY op_id, slot`);
    console.log('  rows per slot:');
    for (const r of rows) console.log(`    op ${String(r.op_id).padEnd(20)} ${r.slot.padEnd(8)} ${r.n}`);

    // Decoded values of the query projection against the canonical bytes.
    const agree = await q(`SELECT count(*) AS n,
        count(*) FILTER (WHERE q.value = decode(c.value_bytes)) AS profile_ok
      FROM ${query} q JOIN ${canonical} c
        ON c.op_id = q.op_id::UBIGINT AND c.slot = q.slot AND hex(c.user_key) = hex(encode(q.user_key))
      WHERE q.slot = 'profile'`);
    check('query projection: profile values = canonical bytes', Number(agree[0].n) === 300 && Number(agree[0].profile_ok) === 300, `${agree[0].profile_ok} of ${agree[0].n}`);
    const counts = await q(`SELECT count(*) AS n, count(*) FILTER (WHERE key::BIGINT = key_int AND value::BIGINT = value_int) AS ok,
        sum(value_int) AS total FROM ${query} WHERE slot = 'counts'`);
    check('query projection: counts decoded as int64', Number(counts[0].n) === 300 && Number(counts[0].ok) === 300, `sum of the running counts ${counts[0].total}`);
    const ttl = await q(`SELECT count(*) AS n FROM ${query} WHERE slot = 'seen' AND value = 'web' AND expire_at IS NOT NULL`);
    check('query projection: TTL slot decoded (stamp removed)', Number(ttl[0].n) === 200);
  }
}
if (names.length === 0) {
  console.log(`check-duckdb: FAIL: no exports under ${dir}`);
  process.exit(1);
}
if (failed) {
  console.log(`check-duckdb: FAIL: ${failed} of ${checks} checks over ${names.length} savepoints (DuckDB node-api ${duckVersion})`);
  process.exit(1);
}
console.log(`check-duckdb: PASS: ${checks} checks over ${names.length} savepoints' Parquet exports (DuckDB node-api ${duckVersion}) agree with sptool inspect`);
