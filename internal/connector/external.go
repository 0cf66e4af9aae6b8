package connector

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// External is a connector that reads a system outside Runnel (Kafka, a
// PostgreSQL replication slot): its rows are not a function of a position
// and its reads block on the network. The contract is in doc.go
// ("External sources"); the stream executors (exec.Source,
// exec.TableIngest) are its only callers.
type External interface {
	// Splits lists the source's current splits. It is called when an
	// executor starts and then every SplitPollInterval, from a goroutine of
	// the executor (never from the actor's loop), so it may block on the
	// network until ctx ends. Splits are never removed: a split missing
	// from a later list keeps being read. An error is retried with backoff
	// and shown as the source's status.
	Splits(ctx context.Context) ([]Split, error)
	// OpenSplit returns a reader of split that resumes right after state,
	// the State of the last Batch of that split committed in a checkpoint;
	// state is nil when the split was never read (the reader then starts
	// where the options say, e.g. scan.startup.mode). It may block until
	// ctx ends; an error is retried with backoff.
	OpenSplit(ctx context.Context, split Split, state []byte) (SplitStream, error)
	// Close releases what the source holds (connections shared by its
	// splits). Called once, after every SplitStream is closed.
	Close() error
}

// Split is one independently readable part of an external source: a Kafka
// partition, a CDC slot.
type Split struct {
	// ID names the split for good: its state is checkpointed under it.
	ID string
	// Ordinal assigns the split to an executor: of a source read by k
	// actors, actor Ordinal % k reads it. Kafka uses the partition number,
	// so partitions spread evenly; a single-split source uses 0.
	Ordinal int
}

// SplitStream reads one split. Read is called from one goroutine only (the
// split's reader goroutine); Committed and Close may be called from
// another goroutine at the same time as Read.
type SplitStream interface {
	// Read blocks until the split has changes or news (caught up,
	// skipped records), ctx ends, or the read fails. An error makes the
	// executor close the stream and, after a backoff, reopen the split at
	// the State of the last Batch returned: a stream need not recover by
	// itself.
	Read(ctx context.Context) (Batch, error)
	// Committed reports that the epoch holding state (a Batch.State this
	// stream returned) is durable: the connector may now acknowledge it
	// upstream (I8: a CDC slot confirms the LSN, never earlier). Calls come
	// in order, may skip states, and must not block for long.
	Committed(state []byte)
	// Close stops the stream; a Read in progress returns soon after.
	Close() error
}

// Batch is what one Read delivers.
type Batch struct {
	// Changes holds the changes, in the column order of the Spec's
	// Columns: OpInsert and OpDelete rows, and OpUpdateDelete immediately
	// followed by OpUpdateInsert. An append-only format delivers inserts
	// only. The executor owns the chunk once returned. Deletes and updates
	// need a primary key (Spec.PK): the row deleted is the stored row with
	// the same key, whatever its other columns say.
	Changes types.Chunk
	// State is the split's state after these changes (opaque bytes, at
	// most a few KiB): reopening at it resumes right after them. nil means
	// unchanged since the last Batch.
	State []byte
	// Skipped lists malformed records the stream skipped (I9: bad input
	// never fails the source). The executor counts them per source and
	// logs them, rate-limited.
	Skipped []Skipped
	// CaughtUp reports that the split had nothing more to read when this
	// Batch was assembled (Kafka: the high watermark / last stable offset
	// was reached).
	CaughtUp bool
	// Bytes is the size of the records read for this batch as the
	// upstream sent them (0: not reported), for the source's metrics.
	Bytes int64
	// Lag is how far the split is behind its upstream after this batch
	// (nil: not reported).
	Lag *Lag
	// Truncate deletes every row the table stores before Changes are
	// applied (postgres-cdc: an upstream TRUNCATE, and a snapshot that
	// starts over after an interrupted one). Tables only.
	Truncate bool
	// Notices report upstream events a user must know about that are not
	// errors (postgres-cdc: a column added upstream that the table does
	// not store). Shown in rw_catalog.rw_source_stats; each is reported
	// once.
	Notices []string
	// Unchanged, when not nil, has one entry per row of Changes: for an
	// OpUpdateInsert, the columns (true) that keep their value from the row
	// the OpUpdateDelete before it removed (postgres-cdc: TOASTed values
	// PostgreSQL did not send because they did not change); NULL when that
	// row was not stored. Other entries are nil. Tables only.
	Unchanged [][]bool
}

// Skipped describes one malformed record.
type Skipped struct {
	// Where locates the record upstream ("partition 3 offset 17").
	Where string
	// Reason says what was wrong with it.
	Reason string
}

// Spec is what an external connector is built from.
type Spec struct {
	// Name is the source or table, for logs and errors.
	Name string
	// Columns are the relation's visible columns, in the order a Batch's
	// rows have (a hidden row id is added by the executor).
	Columns []Column
	// PK lists the primary-key columns (indices into Columns) of a table,
	// nil for a source or a table with a hidden row id.
	PK []int
	// Options are the WITH options (lower-cased keys), with FORMAT x
	// ENCODE y (k = v, ...) added as format = x, encode = y and
	// encode.k = v, and INCLUDE clauses as include.* (see
	// FormatOptions and the parser).
	Options map[string]string
	// Log receives the connector's own log lines.
	Log *slog.Logger
}

// ExternalFactory builds an external connector; it checks the options
// without contacting anything (DDL calls it to validate), returning
// *sqlerr.Error for bad options.
type ExternalFactory func(spec Spec) (External, error)

var externals = map[string]ExternalFactory{}

// RegisterExternal adds an external connector under name (called from the
// connector package's init; the server imports it for the side effect).
func RegisterExternal(name string, f ExternalFactory) { externals[name] = f }

// ColumnsFunc derives a relation's columns from its WITH and FORMAT
// options (a protobuf message's fields); nil columns: the options do not
// describe any. Errors are *sqlerr.Error.
type ColumnsFunc func(options map[string]string) ([]Column, error)

var columnFuncs = map[string]ColumnsFunc{}

// RegisterColumns adds how connector name derives columns from options.
func RegisterColumns(name string, f ColumnsFunc) { columnFuncs[name] = f }

// KnownOptions tells whether a WITH option key means something to a
// connector; the frontend warns about the others (a typo would otherwise
// be ignored without a word).
type KnownOptions func(key string) bool

var knownOptions = map[string]KnownOptions{}

// RegisterKnownOptions adds connector name's option check.
func RegisterKnownOptions(name string, f KnownOptions) { knownOptions[name] = f }

// UnknownOptions lists, sorted, the keys of options the connector they
// name does not use (none for a connector without a registered check).
// Keys Runnel itself stores (format, encode, encode.*, include.*, and
// those starting with '_') are never unknown.
func UnknownOptions(options map[string]string) []string {
	f := knownOptions[strings.ToLower(options["connector"])]
	if f == nil {
		return nil
	}
	var out []string
	for k := range options {
		switch {
		case k == "connector", k == "format", k == "encode", strings.HasPrefix(k, "encode."),
			strings.HasPrefix(k, "include."), strings.HasPrefix(k, "_"), f(k):
		default:
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// InferColumns returns the columns options describe, for a CREATE SOURCE
// or CREATE TABLE that declares none (RisingWave reads them from the
// schema: ENCODE PROTOBUF); nil when the connector cannot say.
func InferColumns(options map[string]string) ([]Column, error) {
	if f := columnFuncs[strings.ToLower(options["connector"])]; f != nil {
		return f(options)
	}
	return nil, nil
}

// IsExternal reports whether options name an external connector.
func IsExternal(options map[string]string) bool {
	_, ok := externals[strings.ToLower(options["connector"])]
	return ok
}

// OpenExternal builds the external connector named by options["connector"].
func OpenExternal(spec Spec) (External, error) {
	name := strings.ToLower(spec.Options["connector"])
	f := externals[name]
	if f == nil {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "connector %q is not supported", name)
	}
	if spec.Log == nil {
		spec.Log = slog.Default()
	}
	return f(spec)
}

// Validate checks a connector's options and columns, generator or
// external, without starting it (CREATE SOURCE / CREATE TABLE).
func Validate(spec Spec) error {
	if IsExternal(spec.Options) {
		src, err := OpenExternal(spec)
		if err != nil {
			return err
		}
		return src.Close()
	}
	_, err := Open(spec.Columns, spec.Options)
	return err
}

// FormatOptions folds FORMAT format ENCODE encode (k = v, ...) into the WITH
// options as a connector sees them: format, encode, encode.k.
func FormatOptions(options map[string]string, format, encode string, encodeOptions map[string]string) map[string]string {
	if format == "" && encode == "" {
		return options
	}
	out := make(map[string]string, len(options)+2+len(encodeOptions))
	for k, v := range options {
		out[k] = v
	}
	out["format"] = strings.ToLower(format)
	out["encode"] = strings.ToLower(encode)
	for k, v := range encodeOptions {
		out["encode."+k] = v
	}
	return out
}

// Lag is how far a split is behind its upstream, in the unit its
// connector measures: Kafka offsets behind the partition's high watermark
// (or last stable offset), CDC WAL bytes behind the upstream's WAL end.
type Lag struct {
	Messages int64
	Bytes    int64
}
