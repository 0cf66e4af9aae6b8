// Package storage is Runnel's LSM storage engine on object storage.
//
// # Data
//
// Every stored key is table_id (4 B, BE) | rest | ^epoch (8 B, BE): the
// caller's key ("rest": vnode | memcomparable pk for state tables) is
// prefixed by the table and suffixed by the inverted epoch, so the newest
// version of a key sorts first. SSTs are pebble/v2 sstables with a custom
// Comparer whose Split separates prefix and suffix; the bloom filter is on
// the prefix, so a point read is one SeekPrefixGE(prefix, prefix+^E).
// Values carry a one-byte tag (put / tombstone). Formats:
// docs/storage-format.md.
//
// # Write path
//
// Ingest(epoch, table, kvs) sorts and copies one batch into an immutable
// run. Runs of uncommitted epochs are visible to uncommitted reads. When
// the buffer exceeds WriteBufferBytes, runs are spilled to SSTs owned by an
// upload job record (still invisible to committed reads). Commit(e) merges
// the runs of epochs <= e into L0 SSTs uploaded under an upload job and then
// writes one version delta in one metastore transaction, which also marks
// the jobs committed. That transaction also records a spare upload job for
// the next commit, so a commit is one PUT per SST plus one metastore
// transaction: the record of the job a commit uploads under was made
// durable by the commit before it (a spare older than half the GC grace
// period is aborted and replaced, so the commit fence never sees it).
//
// # Versions
//
// The version (levels of SSTs, registered tables, committed epoch, safe
// epoch) lives in the metastore as deltas plus a periodic full checkpoint.
// Readers pin a version by reference count; objects leave only when no
// pinned version references them.
//
// # Compaction and GC
//
// Leveled compaction (docs/storage-format.md explains the choice): L0 ->
// L1 takes all of L0; Ln -> Ln+1 takes the largest file. A compaction keeps
// every version newer than the oldest pinned epoch and the newest one at
// or below it, and drops data of unregistered tables. Its job record
// (inputs, reserved output ids, state Planned -> Running -> Committing ->
// Committed | Aborted) is durable before its first output.
//
// With Options.RemoteCompaction the merge runs in a compactor process
// (compactor.go): the engine writes the job record and a task row with
// the plan, a Compactor claims the task (FOR UPDATE SKIP LOCKED on
// PostgreSQL) under a lease, uploads under the record's reserved ids and
// hands the outputs back, and the engine commits the delta itself (one
// writer of the version, I1/I2); a lapsed claim or a cancel aborts the
// job. Both ways share mergeInputs and commitCompaction.
//
// # Retention and time ranges (retention.go)
//
// A table with a Retention (a time-series table) has its row time decoded
// from its keys: every SST records its per-table time range in the version
// (SSTMeta.Times). Keys past a TTL are skipped by reads and dropped by any
// compaction; an SST whose rows are all past it leaves the version whole
// in a drop-only compaction (then GC, I1); ReadOptions.Time skips SSTs
// whose range is outside a scan's time window (ReadStats counts the SSTs
// read and pruned).
//
// # Time windows (window.go)
//
// Keys of tables with a time decoder leave L0 not for L1 but for the
// window level (Levels[WindowLevel]): one SST per (table, time window),
// merged only with files of the same window, so a time range reads only
// its windows and an expired window leaves the version whole (then GC,
// I1). docs/storage-format.md §8a.
//
// # Invariants guarded here (ARCHITECTURE.md §3)
//
//   - I1: every object is referenced by a (pinned) version, named by a live
//     job record written before it (createJob allocates the job id and the
//     output ids in the same transaction, outputs > job id), or on the
//     deletion queue. Object ids come from a durable counter and are never
//     reused. FullGC reads jobs, then the version, then the deletion queue,
//     then lists, then the id watermark, and deletes only unowned objects
//     older than the grace period. The commit fence rejects a delta adding
//     an object that is queued, not an output of the delta's live jobs, or
//     whose job record was last renewed longer than the grace period ago.
//   - I2: CompactionJob.Cancel and commit-start share the job's mutex; a
//     cancel that wins returns only after abortJob moved the outputs to the
//     deletion queue. A version write with an unknown outcome is resolved
//     by re-reading the version; until then the outputs stay owned by the
//     live record and GC deletes nothing.
//   - I4: every read path (Get, Iter and each Iterator.Next, Snapshot
//     reads) checks the table against the version and the tables dropped
//     since Open and fails with ErrTableDropped ("table N has been
//     dropped").
//   - I7 (storage half): Commit returns only after the delta is durable in
//     the metastore; Open discards nothing committed.
//
// RegisterTablesWith and UnregisterTablesWith run a caller's writes (the
// catalog entry owning the tables) in the transaction of the delta, and
// record each table's registration time (storage_table_registrations) so
// that ctl storage check can tell a table just registered from one that no
// catalog object owns (RegisteredTables).
//
// One Engine owns a metastore at a time (the meta role): Open aborts every
// live job it finds, assuming their writers are gone.
//
// # Tests
//
//   - TestCompactionCancelRace: cancel / injected failure / crash (reopen
//     from the metastore) / ambiguous commit write at each named pause
//     point; after recovery and GC the store holds exactly the referenced
//     objects.
//   - TestSimulation: seeded random operations with a fake clock,
//     object-store faults (including PUTs that fail but land), metastore
//     faults (failures, lost acknowledgements, ambiguous commits that did
//     not land) and crash+reopen; I1 is checked after every step and every
//     read against a model. RUNNEL_SIM_SEEDS=N for more seeds,
//     RUNNEL_SIM_SEED=S to replay one (failures print it).
//   - TestCrashKill: a child process SIGKILLed mid-work (RUNNEL_CRASH_SEED
//     replays a schedule); TestLargeIngestMemory (RUNNEL_STORAGE_LARGE_KEYS)
//     bounds peak RSS; BenchmarkPebble* compare with pebble.DB
//     (docs/benchmarks.md).
//
// This package must not import anything above it (stream, meta, sql).
package storage
