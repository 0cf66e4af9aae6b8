// Package connector holds the connectors a source or table names with
// WITH (connector = '...'). There are two kinds, behind two seams:
//
//   - Generators (Source, SplitReader; Register/Open): deterministic,
//     non-blocking, insert-only streams whose rows are a pure function of
//     an int64 position. nexmark (the Nexmark auction stream, per
//     /work/shared/design/NEXMARK.md) and datagen (RisingWave-style
//     per-column generators) are generators.
//   - External connectors (External, SplitStream; RegisterExternal/
//     OpenExternal): systems outside Runnel whose reads block on the
//     network and whose progress is an opaque per-split state — kafka
//     (package kafka), postgres-cdc. Their contract is below, under
//     "External sources".
//
// # Generators
//
// Generators share one design: every generated row is a pure function of its
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
//
// # External sources
//
// An external connector is the seam between Runnel's stream executors
// and a system that pushes or serves changes: three interfaces, External
// (the configured source), SplitStream (one split being read) and Batch
// (what one read returns). The executors (exec.Source for a CREATE SOURCE
// read by a view, exec.TableIngest for a CREATE TABLE ... WITH
// (connector)) do everything else: threads, checkpoints, retries,
// statistics. A connector package implements:
//
//	func init() { connector.RegisterExternal("kafka", New) }
//	func New(spec connector.Spec) (connector.External, error)
//
// The contract, numbered as a connector author needs it:
//
//  1. New checks spec.Options (WITH options; FORMAT/ENCODE folded in as
//     format, encode, encode.<k>; see FormatOptions) and spec.Columns /
//     spec.PK, and returns *sqlerr.Error for bad ones (22023 naming the
//     option, 0A000 for unsupported features, 42P16 for a format that
//     needs a primary key on a relation without one). It must not connect
//     to anything: DDL calls it (Validate) only to check, then Close.
//  2. Splits lists the splits (Kafka: one per partition; CDC: one).
//     Split.ID is the permanent key of the split's state; Split.Ordinal
//     spreads splits over a source's actors (actor Ordinal % count reads
//     it). The executors call Splits when they start and every
//     exec.SplitPollInterval (5 s): splits added later are picked up;
//     splits are never removed. Splits may block on the network; errors
//     are retried with backoff and shown as the source's status.
//  3. OpenSplit(split, state) resumes right after state: the State of the
//     last Batch whose changes were committed in a checkpoint, or nil for
//     a split never read (start where the options say). It runs on the
//     split's own goroutine and may block until ctx ends.
//  4. SplitStream.Read blocks until there is something to deliver and
//     returns one Batch: Changes (ops Insert, Delete, UpdateDelete then
//     UpdateInsert adjacent; rows in spec.Columns order, without the
//     hidden row id), the split's State after them (nil: unchanged),
//     Skipped (malformed records, located "partition 3 offset 17"), and
//     CaughtUp (nothing more to read right now). A Batch with only a new
//     State is fine and useful: a CDC keepalive advancing the LSN must
//     reach the checkpoint so the slot can be acknowledged while idle.
//     Keep batches bounded (a few thousand rows): the executor queues at
//     most exec.externalQueue (16) of them per actor, so a slow downstream
//     pauses reading instead of growing memory.
//  5. An error from OpenSplit or Read is never fatal: the executor logs
//     it, shows "retrying: split <id>: <error>" in
//     rw_catalog.rw_source_stats, closes the stream, waits (100 ms
//     doubling to 5 s) and reopens the split at the State of the last
//     Batch it received. So Read may simply return the connection error.
//     Malformed input is not an error: skip the record, list it in
//     Skipped, and keep reading (I9); a field of the wrong type becomes
//     NULL (RisingWave's rule), not a skip.
//  6. Exactly once (I7): the executor writes each split's State, as of
//     the last Batch it emitted, into its state table at every barrier,
//     in the same epoch as those rows. After a crash or RECOVER the
//     executor is rebuilt and OpenSplit is called with the committed
//     State: the rows of uncommitted epochs are read again, committed
//     ones never. A State must therefore capture everything needed to
//     resume exactly (Kafka: the next offset; CDC: the LSN and, during the
//     initial snapshot, the snapshot's progress).
//  7. Acknowledgement (I8): SplitStream.Committed(state) is called, from
//     the actor's goroutine and possibly concurrently with Read, once the
//     epoch holding state is committed — checked at each barrier, so about
//     one barrier interval after the commit. Only then may the connector
//     tell upstream (CDC: StandbyStatusUpdate with that LSN). Calls come
//     in order and may skip states; a call arriving while a split is being
//     reopened is dropped (the next one covers it). Kafka needs no
//     acknowledgement (offsets live only in the checkpoint).
//  8. Close on a SplitStream makes a blocked Read return; Close on
//     External follows the close of every stream (DROP, a stopped actor,
//     recovery). Connectors must not leak goroutines past Close.
//
// The executors add the hidden _row_id of a source or a table without a
// primary key (exec.NextRowID); a source is append-only, so connectors
// whose formats produce deletes (UPSERT, DEBEZIUM, CDC) must require a
// table with a primary key (rule 1). On a table, an insert replaces the
// stored row with its key and a delete removes the stored row with its
// key (the other columns of a delete's row are ignored).
package connector
