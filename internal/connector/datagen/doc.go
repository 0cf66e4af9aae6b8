// Package datagen is the RisingWave-style datagen connector: each column of
// the source (or table) gets a generator chosen by its options.
//
//	CREATE SOURCE s (id INT, v DOUBLE PRECISION, name VARCHAR, ts TIMESTAMP)
//	WITH (connector = 'datagen',
//	      fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '1000',
//	      fields.v.kind = 'random', fields.v.min = '0', fields.v.max = '100', fields.v.seed = '7',
//	      fields.name.length = '12',
//	      fields.ts.max_past = '1 hour', fields.ts.basetime = '2024-06-01 00:00:00',
//	      datagen.rows.per.second = '100', datagen.split.num = '2');
//
// # Rows
//
// Row i (0, 1, 2, ...) is a pure function of i and the options: a
// sequence column is start + i·step; a random column's value comes from a
// wyrand generator seeded with splitmix64 of (seed, i). So split s of k
// produces rows s, s+k, s+2k, ... (a Reader; its Position is the only
// state to checkpoint), and any row can be regenerated after recovery.
// The stream ends after the shortest sequence column's last value; with
// no sequence column it is unbounded.
//
// # Per-column options: fields.<column>.<property>
//
//	kind      sequence | random (default random)
//	start/end sequence bounds, inclusive. Integers and varchar (the decimal
//	          text of an integer sequence): default 0 .. the type's maximum.
//	          Floats: start + i, default 0 .. max. Dates: start (required) +
//	          i days. Timestamps: start (required) + i·step.
//	step      timestamp sequences only: a fixed interval, default '1 second'
//	min/max   random bounds. Integers: inclusive, default 0 .. the type's
//	          maximum. Floats: [min, max), default [0, 1). Dates and
//	          timestamps: inclusive literals, both required unless max_past
//	          is used.
//	max_past  random timestamps without min/max: uniform in
//	          [basetime - max_past, basetime]; default '1 day'
//	max_past_mode  only 'absolute' ('relative' would make values depend on
//	          when they are generated)
//	basetime  the upper end for max_past. Required by ParseOptions; the SQL
//	          layer fills it with the creation time by calling PinOptions
//	          once and storing the result.
//	length    random varchar: that many letters and digits, default 10
//	seed      random: default the column's 1-based position, so two random
//	          columns differ unless given the same seed
//
// Supported types: smallint, integer, bigint, real, double precision,
// varchar/text, boolean (random only), date, timestamp, timestamptz.
// Literals are read with PostgreSQL's input functions in UTC.
//
// # Source options
//
//	datagen.rows.per.second  wall-clock rows per second per split; default
//	                         10 (RisingWave's); 0 = unthrottled
//	datagen.split.num        parallel splits; default 1
//
// Errors from ParseOptions are *sqlerr.Error naming the option: 22023 for
// bad values, unknown options and properties that do not apply to the
// column (fields.i.length on an integer), 42703 for an unknown column,
// 0A000 for unsupported types and modes.
//
// The package guards no storage invariant itself; it provides what I7
// needs from a source: regenerating from a checkpointed position yields
// exactly the rows that were not yet acknowledged.
package datagen
