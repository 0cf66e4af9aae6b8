package clienttest

// ItemsDDL creates the table every client writes: one column per type
// Runnel stores. Each client runs it itself, through its own API.
const ItemsDDL = `CREATE TABLE items (
	id integer PRIMARY KEY,
	b boolean, i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision,
	n numeric(12,3), t text, vc varchar(20), by bytea, d date, tm time,
	ts timestamp, tstz timestamptz, iv interval, j jsonb, u uuid
)`

// ItemsColumns are the items table's columns in order.
var ItemsColumns = []string{"id", "b", "i2", "i4", "i8", "f4", "f8", "n", "t", "vc", "by", "d", "tm", "ts", "tstz", "iv", "j", "u"}

// Row 1's values, which every client binds as parameters of its own
// types, in PostgreSQL's text output (TimeZone UTC, DateStyle ISO,
// IntervalStyle postgres) as the server must hold them.
var itemsRow1Text = []string{
	"1", "t", "-32768", "2147483647", "-9223372036854775808", "1.5", "-2.25",
	"12345.678", "héllo\tworld", "varchar", `\x00ff10`, "2024-02-29", "13:14:15.123456",
	"2024-02-29 13:14:15.123456", "2024-02-29 13:14:15.123456+00",
	"1 year 2 mons 3 days 04:05:06", `{"a": [1, 2, null]}`, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
}

// bulkRows is the number of rows each client bulk-loads into bulk
// (id int PRIMARY KEY, v text, u uuid, ts timestamptz); row k has
// v = 'v<k>'.
const bulkRows = 1000
