CREATE TABLE items (
	id integer PRIMARY KEY,
	b boolean, i2 smallint, i4 integer, i8 bigint, f4 real, f8 double precision,
	n numeric(12,3), t text, vc varchar(20), by bytea, d date, tm time,
	ts timestamp, tstz timestamptz, iv interval, j jsonb, u uuid
)
