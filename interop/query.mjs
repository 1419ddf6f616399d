// query: run SQL with DuckDB (the pinned @duckdb/node-api) and print the
// result as a table. A convenience for exploring sptool's Parquet exports
// without installing the DuckDB CLI (see docs/state-as-data.md).
//
//   node interop/query.mjs "SELECT slot, count(*) FROM 'state.parquet' GROUP BY ALL"
//   node interop/query.mjs -f queries.sql
//
// Several statements may be given (separated by ';'); the result of each
// query (SELECT, WITH, DESCRIBE, ...) is printed. Exits 1 on an SQL error.
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const args = process.argv.slice(2);
let sql = args.join(' ');
if (args[0] === '-f' && args[1]) sql = readFileSync(args[1], 'utf8');
if (!sql.trim()) {
  console.error('usage: node interop/query.mjs "SQL" | -f FILE.sql');
  process.exit(2);
}

function show(v) {
  if (v === null || v === undefined) return 'NULL';
  if (v instanceof Uint8Array) return '\\x' + Buffer.from(v).toString('hex');
  if (typeof v === 'object') return JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? x.toString() : x));
  return String(v).replaceAll('\n', '\\n');
}

function print(names, rows) {
  const cells = rows.map((r) => names.map((n) => show(r[n])));
  const width = names.map((n, i) => Math.max(n.length, ...cells.map((c) => c[i].length)));
  const line = (vals) => vals.map((v, i) => v.padEnd(width[i])).join('  ').trimEnd();
  console.log(line(names));
  console.log(line(width.map((w) => '-'.repeat(w))));
  for (const c of cells) console.log(line(c));
  console.log(`(${rows.length} row${rows.length === 1 ? '' : 's'})`);
}

const con = await (await DuckDBInstance.create(':memory:')).connect();
try {
  const statements = sql.split(/;\s*(?:\n|$)/).map((s) => s.trim()).filter(Boolean);
  let printed = 0;
  for (const stmt of statements) {
    const reader = await con.runAndReadAll(stmt);
    const names = reader.columnNames();
    // Results of queries only (CREATE TABLE ... AS reports a row count).
    if (names.length === 0 || !/^\s*(select|with|from|describe|show|summarize|values|pragma|explain|table)\b/i.test(stmt)) continue;
    if (printed++) console.log();
    print(names, reader.getRowObjectsJS());
  }
} catch (e) {
  console.error(`query: ${e.message}`);
  process.exit(1);
}
