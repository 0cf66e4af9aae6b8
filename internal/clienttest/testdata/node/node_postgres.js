// The node-postgres (pg) leg of the client matrix, run by clients_test.go.
'use strict';
const { Client } = require('pg');
const c = require('./common');

async function main() {
  const client = new Client({ host: c.HOST, port: c.PORT, user: 'root', database: 'dev', options: '-c implicit_flush=true' });
  await client.connect();
  await client.query(c.DDL);
  const ph = c.COLUMNS.map((_, i) => `$${i + 1}`).join(', ');
  await client.query(`INSERT INTO items VALUES (${ph})`, c.row1Params());
  await client.query(`INSERT INTO items VALUES (${ph})`, [2, ...Array(c.COLUMNS.length - 1).fill(null)]);

  const res = await client.query('SELECT * FROM items WHERE id = $1', [1]);
  c.check('fields', res.fields.map((f) => f.name), c.COLUMNS);
  c.check('field table OIDs set', res.fields.every((f) => f.tableID > 0), true);
  c.check('field column numbers', res.fields.map((f) => f.columnID), c.COLUMNS.map((_, i) => i + 1));
  const r = res.rows[0];
  c.check('b', r.b, true);
  c.check('i2', r.i2, -32768);
  c.check('i4', r.i4, 2147483647);
  c.check('i8', r.i8, '-9223372036854775808');
  c.check('f4', r.f4, 1.5);
  c.check('f8', r.f8, -2.25);
  c.check('n', r.n, '12345.678');
  c.check('t', r.t, 'héllo\tworld');
  c.check('vc', r.vc, 'varchar');
  c.check('by', [...r.by], [0, 0xff, 0x10]);
  c.check('d', r.d.getFullYear() * 10000 + (r.d.getMonth() + 1) * 100 + r.d.getDate(), 20240229);
  c.check('tm', r.tm, '13:14:15.123456');
  c.check('ts', r.ts.getTime(), c.TS.getTime()); // the process runs with TZ=UTC
  c.check('tstz', r.tstz.getTime(), c.TS.getTime());
  c.check('iv', [r.iv.years, r.iv.months, r.iv.days, r.iv.hours, r.iv.minutes, r.iv.seconds], [1, 2, 3, 4, 5, 6]);
  c.check('j', r.j, { a: [1, 2, null] });
  c.check('u', r.u, c.UUID);
  const r2 = (await client.query('SELECT * FROM items WHERE id = 2')).rows[0];
  c.check('row 2', Object.values(r2).slice(1), Array(c.COLUMNS.length - 1).fill(null));

  // Catalog reflection as node tools do it (information_schema, pg_catalog).
  const cols = await client.query(
    `SELECT column_name, data_type, is_nullable FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, ['items']);
  c.check('information_schema.columns', cols.rows.map((x) => x.column_name), c.COLUMNS);
  c.check('uuid data_type', cols.rows[17].data_type, 'uuid');
  const pk = await client.query(
    `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
     WHERE i.indrelid = 'items'::regclass AND i.indisprimary`);
  c.check('primary key from pg_index', pk.rows.map((x) => x.attname), ['id']);

  // Transactions.
  await client.query('BEGIN');
  await client.query('INSERT INTO items (id) VALUES (100)');
  await client.query('ROLLBACK');
  c.check('rolled back', (await client.query('SELECT count(*)::int AS n FROM items WHERE id = 100')).rows[0].n, 0);

  // Bulk load: multi-row INSERTs with bound parameters in one transaction.
  await client.query('CREATE TABLE bulk (id int PRIMARY KEY, v text, u uuid, ts timestamptz)');
  await client.query('BEGIN');
  for (let start = 0; start < c.BULK_ROWS; start += 250) {
    const vals = [];
    const phs = [];
    for (let i = start; i < start + 250; i++) {
      const k = vals.length;
      phs.push(`($${k + 1}, $${k + 2}, $${k + 3}, $${k + 4})`);
      vals.push(...c.bulkRow(i));
    }
    await client.query(`INSERT INTO bulk VALUES ${phs.join(', ')}`, vals);
  }
  await client.query('COMMIT');

  try {
    await client.query('INSERT INTO bulk (id) VALUES ($1)', [5]);
    throw new Error('duplicate key: no error');
  } catch (e) {
    c.check('duplicate key SQLSTATE', e.code, '23505');
  }
  await client.end();
  console.log('node-postgres matrix: ok');
}

main().catch((e) => { console.error(e); process.exit(1); });
