// The postgres.js (postgres) leg of the client matrix, run by clients_test.go.
'use strict';
const postgres = require('postgres');
const { pipeline } = require('stream/promises');
const { Readable } = require('stream');
const c = require('./common');

async function main() {
  const sql = postgres({
    host: c.HOST, port: c.PORT, user: 'root', database: 'dev', max: 1,
    connection: { implicit_flush: 'true', TimeZone: 'UTC' }, onnotice: () => {},
  });
  await sql.unsafe(c.DDL);
  const p = c.row1Params();
  p[16] = sql.json({ a: [1, 2, null] }); // a JS string bound to jsonb would be stored as a JSON string
  // postgres.js sends a parameter it learns is a timestamp through a JS
  // Date (milliseconds): the microseconds go as text, cast on the server.
  await sql`INSERT INTO items VALUES (${p[0]}, ${p[1]}, ${p[2]}, ${p[3]}, ${p[4]}, ${p[5]}, ${p[6]}, ${p[7]}, ${p[8]},
    ${p[9]}, ${p[10]}, ${p[11]}, ${p[12]}, ${p[13]}::text::timestamp, ${p[14]}::text::timestamptz, ${p[15]}, ${p[16]}, ${p[17]})`;
  await sql`INSERT INTO items (id) VALUES (${2})`;

  const rows = await sql`SELECT * FROM items WHERE id = ${1}`;
  c.check('columns', rows.columns.map((x) => x.name), c.COLUMNS);
  c.check('column table OIDs set', rows.columns.every((x) => x.table > 0), true);
  const r = rows[0];
  c.check('b', r.b, true);
  c.check('i2', r.i2, -32768);
  c.check('i4', r.i4, 2147483647);
  c.check('i8', String(r.i8), '-9223372036854775808');
  c.check('f4', r.f4, 1.5);
  c.check('f8', r.f8, -2.25);
  c.check('n', r.n, '12345.678');
  c.check('t', r.t, 'héllo\tworld');
  c.check('by', [...r.by], [0, 0xff, 0x10]);
  c.check('d', r.d.toISOString().slice(0, 10), '2024-02-29');
  c.check('tm', r.tm, '13:14:15.123456');
  c.check('ts', r.ts.getTime(), c.TS.getTime());
  c.check('tstz', r.tstz.getTime(), c.TS.getTime());
  c.check('iv', r.iv, '1 year 2 mons 3 days 04:05:06');
  c.check('j', r.j, { a: [1, 2, null] });
  c.check('u', r.u, c.UUID);
  const [r2] = await sql`SELECT * FROM items WHERE id = 2`;
  c.check('row 2', Object.values(r2).slice(1), Array(c.COLUMNS.length - 1).fill(null));

  // Catalog reflection.
  const cols = await sql`SELECT column_name, udt_name FROM information_schema.columns
    WHERE table_schema = 'public' AND table_name = ${'items'} ORDER BY ordinal_position`;
  c.check('information_schema.columns', cols.map((x) => x.column_name), c.COLUMNS);
  c.check('udt_name of u', cols[17].udt_name, 'uuid');

  // Transactions: sql.begin commits, an error inside rolls back.
  await sql.begin(async (tx) => { await tx`INSERT INTO items (id, t) VALUES (${3}, ${'three'})`; });
  try {
    await sql.begin(async (tx) => {
      await tx`INSERT INTO items (id) VALUES (${4})`;
      await tx`SELECT 1 / 0`;
    });
    throw new Error('division by zero: no error');
  } catch (e) {
    c.check('error inside begin', e.code, '22012');
  }
  c.check('after begin', (await sql`SELECT id FROM items WHERE id IN (3, 4) ORDER BY id`).map((x) => x.id), [3]);
  await sql`DELETE FROM items WHERE id = 3`;

  // Bulk load: half through COPY FROM STDIN (a writable stream), half
  // through the multi-row insert helper.
  await sql`CREATE TABLE bulk (id int PRIMARY KEY, v text, u uuid, ts timestamptz)`;
  const half = c.BULK_ROWS / 2;
  const lines = [];
  for (let i = 0; i < half; i++) lines.push(c.bulkRow(i).join('\t') + '\n');
  await pipeline(Readable.from(lines), await sql`COPY bulk FROM STDIN`.writable());
  const objs = [];
  for (let i = half; i < c.BULK_ROWS; i++) {
    const [id, v, u, ts] = c.bulkRow(i);
    objs.push({ id, v, u, ts });
  }
  await sql`INSERT INTO bulk ${sql(objs, 'id', 'v', 'u', 'ts')}`;

  try {
    await sql`INSERT INTO bulk (id) VALUES (${5})`;
    throw new Error('duplicate key: no error');
  } catch (e) {
    c.check('duplicate key SQLSTATE', e.code, '23505');
  }
  await sql.end();
  console.log('postgres.js matrix: ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
