// Package connector holds Runnel's built-in data generators, the connectors
// a source or table names with WITH (connector = '...'):
//
//   - nexmark: the Nexmark auction benchmark stream (persons, auctions,
//     bids), per /work/shared/design/NEXMARK.md. See package nexmark.
//   - datagen: RisingWave-style per-column generators (sequence | random).
//     See package datagen.
//
// Both share one design: every generated row is a pure function of its
// position (an event id or a row index) and the options, never of the rows
// before it or of the wall clock. A source executor therefore splits the
// position space by offset/step (split i of k produces positions i, i+k,
// i+2k, ...), persists one integer per split at each checkpoint (the next
// position) and, after recovery, regenerates exactly the rows it would have
// produced (I7: the views over a source equal their queries over exactly
// the rows acknowledged). Wall-clock throttling (nexmark.min.event.gap.in.ns,
// datagen.rows.per.second) only decides when rows are emitted, not what
// they contain; Pacer implements it with the clock passed in.
//
// A source executor for either connector, per split:
//
//	cfg, table, err := nexmark.ParseOptions(options)      // once, at plan time
//	gen := nexmark.NewGenerator(cfg)                      // immutable, shareable
//	rd, err := gen.NewReader(table, split, cfg.SplitNum, pos) // pos: checkpointed, or StartPosition(split)
//	pacer := connector.NewPacer(cfg.MinEventGap, time.Now())
//	between barriers:
//	    n := pacer.Budget(time.Now(), cfg.MaxChunkSize)   // 0: sleep pacer.Wait(now) or until the barrier
//	    k := rd.NextChunk(&chunk, n)                      // fresh rows as inserts, safe to send downstream
//	    pacer.Emitted(k)
//	    (nexmark) watermark: rd.EventTimeAt(rd.Position()) bounds every later date_time of the split
//	    if rd.Done() { the bounded stream has ended }
//	at a checkpoint barrier: persist rd.Position()
//
// The packages produce types.Row values directly in the column order of
// the source's schema: bigint → DInt64, varchar → DVarchar, timestamp →
// DTimestamp (µs since the Unix epoch), and so on. They do not touch
// storage, the catalog or the stream runtime; the SQL layer passes the
// WITH options through as a map[string]string to each package's
// ParseOptions, whose errors are *sqlerr.Error (22023
// invalid_parameter_value naming the bad option, 0A000 for unsupported
// features).
package connector
