-- The psql leg of the client matrix (clients_test.go runs it with -X -v ON_ERROR_STOP=1).
\set VERBOSITY verbose
CREATE TABLE items (
	id integer PRIMARY KEY,
	b boolean, i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision,
	n numeric(12,3), t text, vc varchar(20), by bytea, d date, tm time,
	ts timestamp, tstz timestamptz, iv interval, j jsonb, u uuid
);
-- psql 15 has no \bind: values are interpolated client-side from variables.
\set tval 'héllo	world'
INSERT INTO items VALUES (1, true, -32768, 2147483647, -9223372036854775808, 1.5, -2.25,
	12345.678, :'tval', 'varchar', '\x00ff10', '2024-02-29', '13:14:15.123456',
	'2024-02-29 13:14:15.123456', '2024-02-29 13:14:15.123456+00',
	'1 year 2 mons 3 days 04:05:06', '{"a": [1, 2, null]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
INSERT INTO items (id) VALUES (2);
\pset format unaligned
\pset tuples_only on
SELECT * FROM items ORDER BY id;
\pset tuples_only off
\pset format aligned
CREATE TABLE bulk (id int PRIMARY KEY, v text, u uuid, ts timestamptz);
\echo === describe
\d
\echo === dt
\dt
\echo === d items
\d items
\echo === l+
\l+
\echo === df
\df
\echo === dfS+ length
\dfS+ length
\echo === dT+
\dT+
\echo === dn
\dn
