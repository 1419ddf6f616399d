// The drop filter of make bench, run by nodejs-polars for comparison:
// keep the rows whose stored key starts with a byte below 64 (key_group <
// 64 for keyed rows). Polars cannot take Arrow binary apart except in SQL.
import pl from 'nodejs-polars';
import { readFileSync } from 'node:fs';

const [input, output] = process.argv.slice(2);
const df = pl.readIPCStream(readFileSync(input));
const kept = pl.SQLContext({ t: df }).execute("SELECT * FROM t WHERE key_bytes < X'40'", { eager: true });
kept.writeIPCStream(output);
console.log(`${df.height} rows in, ${kept.height} kept`);
