// Shared by the node-postgres and postgres.js legs of the client matrix.
'use strict';
const fs = require('fs');
const path = require('path');
const assert = require('assert');

exports.DDL = fs.readFileSync(path.join(__dirname, '..', 'items.sql'), 'utf8');
exports.COLUMNS = ['id', 'b', 'i2', 'i4', 'i8', 'f4', 'f8', 'n', 't', 'vc', 'by', 'd', 'tm', 'ts', 'tstz', 'iv', 'j', 'u'];
exports.HOST = process.env.RUNNEL_HOST;
exports.PORT = Number(process.env.RUNNEL_PORT);
exports.BULK_ROWS = 1000;
exports.UUID = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';
exports.TS = new Date(Date.UTC(2024, 1, 29, 13, 14, 15, 123));

// Row 1 as both drivers bind it (text parameters).
exports.row1Params = () => [
  1, true, -32768, 2147483647, '-9223372036854775808', 1.5, -2.25,
  '12345.678', 'héllo\tworld', 'varchar', Buffer.from([0, 0xff, 0x10]), '2024-02-29', '13:14:15.123456',
  '2024-02-29 13:14:15.123456', '2024-02-29 13:14:15.123456+00',
  '1 year 2 mons 3 days 04:05:06', JSON.stringify({ a: [1, 2, null] }), exports.UUID,
];

exports.check = (what, got, want) => {
  try {
    assert.deepStrictEqual(got, want);
  } catch (e) {
    throw new Error(`${what}: got ${JSON.stringify(got)}; want ${JSON.stringify(want)}`);
  }
};

exports.bulkRow = (i) => [i, `v${i}`, `00000000-0000-0000-0000-${i.toString(16).padStart(12, '0')}`, '2020-01-01 00:00:00+00'];
