// check-arrow: apache-arrow (JavaScript, no code shared with sptool) reads
// every snapshot file sptool wrote under DIR and checks it against clink's
// format contract and against `sptool cat --format jsonl` of the same file.
//
//   node check-arrow.mjs DIR        (SPTOOL_BIN names the sptool binary)
//
// For every *.snap, *.snap.gz and *.snap.zst (and every
// materializations/*.bin) under DIR:
//   - whole-file gzip/zstd compression is undone (node:zlib, fzstd);
//   - canonical stream: exactly the fields op_id Uint64, key_bytes Binary,
//     value_bytes Binary, none nullable; schema metadata with
//     clink.format_version = "1" first, clink.state_versions (if any) second;
//     rows in canonical order (op, key bytes), no duplicates;
//   - changelog stream (changelog+file trees): row_kind Uint8, op_id Uint64,
//     key_bytes Binary, value_bytes Binary, no metadata, one row of kind 3
//     whose handle names a materialisation inside the tree;
//   - rows (op, key, value) equal to what `sptool cat --format jsonl` prints
//     for that file (for a changelog file: its materialisation's rows);
//   - a .meta sidecar, where present, gives the payload's size.
// Prints one line per file and a PASS or FAIL summary; exits 1 on any mismatch.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { spawnSync } from 'node:child_process';
import { RecordBatchReader, Type, compressionRegistry, CompressionType } from 'apache-arrow';
import * as fzstd from 'fzstd';

const arrowVersion = JSON.parse(readFileSync(new URL('./node_modules/apache-arrow/package.json', import.meta.url), 'utf8')).version;

// Record-batch bodies compressed with ZSTD (sptool never writes them, but
// clink inputs may have them): let apache-arrow decode them with fzstd.
compressionRegistry.set(CompressionType.ZSTD, { encode: null, decode: (d) => fzstd.decompress(d) });

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node check-arrow.mjs DIR');
  process.exit(2);
}
const sptool = process.env.SPTOOL_BIN || 'sptool';

function walk(d, out = []) {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (/\.snap(\.gz|\.zst)?$/.test(e.name) || (e.name.endsWith('.bin') && d.endsWith(`${sep}materializations`))) out.push(p);
  }
  return out.sort();
}

const hex = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('hex');

function decompress(buf) {
  if (buf.length >= 4 && buf[0] === 0x28 && buf[1] === 0xb5 && buf[2] === 0x2f && buf[3] === 0xfd) return [Buffer.from(fzstd.decompress(buf)), 'zstd'];
  if (buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) return [gunzipSync(buf), 'gzip'];
  if (buf.length >= 4 && buf[0] === 0x04 && buf[1] === 0x22 && buf[2] === 0x4d && buf[3] === 0x18) throw new Error('lz4-frame whole-file compression: no reader here');
  return [buf, ''];
}

// read returns the schema and every row of an Arrow IPC stream.
function read(buf) {
  const reader = RecordBatchReader.from(buf);
  reader.open();
  const schema = reader.schema; // capture before iterating (undefined afterwards)
  const rows = [];
  let batches = 0;
  for (const batch of reader) {
    batches++;
    const cols = schema.fields.map((f) => batch.getChild(f.name));
    for (let i = 0; i < batch.numRows; i++) rows.push(cols.map((c) => c.get(i)));
  }
  return { schema, rows, batches };
}

const isUint = (t, bits) => t.typeId === Type.Int && t.bitWidth === bits && t.isSigned === false;
const isBinary = (t) => t.typeId === Type.Binary;

function checkFields(schema, want) {
  const got = schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable ? 'nullable' : 'non-null'}`).join(', ');
  if (schema.fields.length !== want.length) return `fields ${got}, want ${want.map((w) => w[0]).join(', ')}`;
  for (let i = 0; i < want.length; i++) {
    const [name, ok] = want[i];
    const f = schema.fields[i];
    if (f.name !== name || !ok(f.type) || f.nullable) return `fields ${got}`;
  }
  return null;
}

function catRows(path) {
  const r = spawnSync(sptool, ['cat', '--format', 'jsonl', path], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`sptool cat exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout.split('\n').filter(Boolean).map((line) => {
    // op ids exceed 2^53: take them from the text, not from JSON.parse.
    const op = /"op":(\d+)/.exec(line)[1];
    const o = JSON.parse(line);
    return `${op}/${o.key_hex}/${o.value_hex}`;
  });
}

function compareKeys(a, b) {
  // canonical order: op (unsigned), then key bytes
  if (a.op !== b.op) return a.op < b.op ? -1 : 1;
  return Buffer.compare(Buffer.from(a.key), Buffer.from(b.key));
}

// canonicalRows checks a canonical stream. Files sptool re-encoded carry
// sptool.provenance and must be in its canonical form (format version
// first, the version map second, rows sorted without duplicates, one
// batch); files a tree copy kept byte for byte are checked as clink input
// (schema and format version only).
function canonicalRows(schema, rows, batches, problems) {
  const bad = checkFields(schema, [['op_id', (t) => isUint(t, 64)], ['key_bytes', isBinary], ['value_bytes', isBinary]]);
  if (bad) problems.push(bad);
  const keys = [...schema.metadata.keys()];
  const rewritten = schema.metadata.has('sptool.provenance');
  const fv = schema.metadata.get('clink.format_version');
  if (rewritten || fv !== undefined) {
    if (keys[0] !== 'clink.format_version' || fv !== '1') problems.push(`metadata keys ${JSON.stringify(keys)}: clink.format_version="1" must come first`);
  }
  const sv = keys.indexOf('clink.state_versions');
  if (rewritten && sv > 1) problems.push(`clink.state_versions at position ${sv}, want 2nd`);
  if (rewritten && sv === 1 && schema.metadata.get('clink.state_versions') === '') problems.push('empty clink.state_versions written');
  const out = rows.map(([op, key, value]) => ({ op, key, value }));
  if (rewritten) {
    for (let i = 1; i < out.length; i++) {
      if (compareKeys(out[i - 1], out[i]) >= 0) {
        problems.push(`row ${i} is not after row ${i - 1} in canonical order (or duplicates it)`);
        break;
      }
    }
    if (batches !== 1) problems.push(`${batches} record batches, want 1`);
  }
  return { rows: out.map((r) => `${r.op}/${hex(r.key)}/${hex(r.value)}`), rewritten };
}

let files = 0, failed = 0, totalRows = 0;
const kinds = {};
for (const path of walk(dir)) {
  const rel = relative(dir, path);
  const problems = [];
  let n = 0, what = '';
  try {
    const raw = readFileSync(path);
    if (existsSync(path + '.meta')) {
      const m = /payload_bytes=(\d+)/.exec(readFileSync(path + '.meta', 'utf8'));
      if (!m || Number(m[1]) !== raw.length) problems.push(`sidecar payload_bytes ${m && m[1]}, file has ${raw.length} bytes`);
    }
    const [buf, comp] = decompress(raw);
    const { schema, rows, batches } = read(buf);
    let got;
    if (schema.fields.length === 4 && schema.fields[0].name === 'row_kind') {
      what = 'changelog';
      const bad = checkFields(schema, [['row_kind', (t) => isUint(t, 8)], ['op_id', (t) => isUint(t, 64)], ['key_bytes', isBinary], ['value_bytes', isBinary]]);
      if (bad) problems.push(bad);
      if (schema.metadata.size !== 0) problems.push(`changelog schema metadata ${JSON.stringify([...schema.metadata.keys()])}, want none`);
      if (rows.length !== 1 || rows[0][0] !== 3) problems.push(`want one row of kind 3 (a materialisation handle), got ${rows.length} rows`);
      const handle = Buffer.from(rows[0][3]).toString('utf8');
      const m = /(^|\/)(v\d+\/\d+\/materializations\/[^/]+)$/.exec(handle);
      const root = path.slice(0, path.lastIndexOf(`${sep}v`));
      if (!m || !existsSync(join(root, m[2]))) problems.push(`handle ${handle} does not name a materialisation in the tree`);
      const mat = read(decompress(readFileSync(join(root, m[2])))[0]);
      got = canonicalRows(mat.schema, mat.rows, mat.batches, problems).rows;
    } else {
      const c = canonicalRows(schema, rows, batches, problems);
      got = c.rows;
      what = path.endsWith('.bin') ? 'materialisation' : c.rewritten ? 'canonical' : 'canonical copied verbatim';
    }
    if (comp) what += ` ${comp}-compressed`;
    const want = catRows(path);
    n = got.length;
    const a = [...got].sort(), b = [...want].sort();
    if (a.length !== b.length || a.some((x, i) => x !== b[i])) {
      const missing = b.filter((x) => !got.includes(x)).slice(0, 3);
      const extra = a.filter((x) => !want.includes(x)).slice(0, 3);
      problems.push(`rows differ from sptool cat: apache-arrow ${a.length}, sptool ${b.length}; only in cat ${JSON.stringify(missing)}, only in arrow ${JSON.stringify(extra)}`);
    }
  } catch (e) {
    problems.push(`error: ${e.message}`);
  }
  files++;
  totalRows += n;
  kinds[what] = (kinds[what] || 0) + 1;
  if (problems.length) {
    failed++;
    console.log(`  FAIL ${rel}: ${problems.join('; ')}`);
  } else {
    console.log(`  ok   ${rel} (${what}, ${n} rows)`);
  }
}
const summary = Object.entries(kinds).map(([k, v]) => `${v} ${k}`).join(', ');
if (files === 0) {
  console.log(`check-arrow: FAIL: no snapshot files under ${dir}`);
  process.exit(1);
}
if (failed) {
  console.log(`check-arrow: FAIL: ${failed} of ${files} files differ (apache-arrow ${arrowVersion})`);
  process.exit(1);
}
console.log(`check-arrow: PASS: apache-arrow ${arrowVersion} read all ${files} files sptool wrote (${summary}; ${totalRows} rows), schema, metadata and rows as sptool cat prints them`);
