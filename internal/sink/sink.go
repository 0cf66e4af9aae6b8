package sink

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Column is one column a sink delivers.
type Column struct {
	Name string
	Type types.Type
}

// Change is one change delivered to a target: Op is OpInsert, OpDelete,
// OpUpdateDelete or OpUpdateInsert (an update is a delete then an insert);
// Row holds the sink's columns.
type Change struct {
	Op  types.Op
	Row types.Row
}

// Config describes a sink to its connector.
type Config struct {
	// Name and ID identify the sink (errors, the target's progress row).
	Name string
	ID   uint64
	// Columns are the delivered columns, Key the indices of the target's
	// key among them (upsert sinks).
	Columns []Column
	Key     []int
	// Type is "append-only" or "upsert".
	Type string
	// Options are the WITH options (lower-cased keys).
	Options        map[string]string
	Format, Encode string
	EncodeOptions  map[string]string
}

// Upsert reports whether the sink is an upsert sink.
func (c *Config) Upsert() bool { return c.Type == TypeUpsert }

// Sink types.
const (
	TypeAppendOnly = "append-only"
	TypeUpsert     = "upsert"
)

// Target is a connector's end of a sink: an external system to which the
// worker delivers committed epochs, in order, one at a time.
type Target interface {
	// Open connects. delivered is the last epoch the target records it
	// holds (exactly-once targets keep it in the same transaction as the
	// rows); 0 when the target keeps no such record.
	Open(ctx context.Context) (delivered uint64, err error)
	// Begin starts delivering epoch; the changes follow through Write in
	// order, then Commit makes them visible in the target at once where
	// the target allows it.
	Begin(ctx context.Context, epoch uint64) (Txn, error)
	// Close releases the connection (Open may be called again).
	Close() error
}

// Buffered is implemented by a target that keeps epochs it was handed
// past their Commit (a file sink whose files span epochs:
// rollover_seconds). The worker keeps such an epoch's log rows, and counts
// them in the backlog, until Durable reports the epoch in the target (I8):
// a crash before then hands the target the epoch again from the log. After
// any failure (a Rollback), the worker Closes and Opens the target again,
// which drops what it buffered, and hands it again every epoch after the
// last durable one.
type Buffered interface {
	Target
	// Durable returns the last epoch every row of which is in the target
	// (every epoch handed since Open, up to it, is).
	Durable() uint64
	// Advance tells the target that every epoch up to committed was
	// handed to it (those with rows through Begin and Commit), so that it
	// can write out what it holds when its time has come without new rows.
	Advance(ctx context.Context, committed uint64) error
}

// Txn is the delivery of one epoch.
type Txn interface {
	Write(ctx context.Context, changes []Change) error
	Commit(ctx context.Context) error
	Rollback()
}

// Connector opens targets. New validates the options (errors carry a
// SQLSTATE and name the sink) without connecting.
type Connector struct {
	New func(cfg *Config) (Target, error)
	// NeedsFormat: FORMAT ... ENCODE ... is required.
	NeedsFormat bool
	// Known tells whether a WITH option key means something to the
	// connector (besides the options every sink takes); nil: every key
	// does. The frontend warns about the others.
	Known func(key string) bool
}

// commonOptions are the WITH options every sink takes (ParseSpec).
var commonOptions = map[string]bool{
	"connector": true, "type": true, "primary_key": true, "force_append_only": true, "sink_decouple": true,
	"commit_checkpoint_interval": true, "snapshot": true, "log_store.max_pending_rows": true,
}

// UnknownOptions lists, sorted, the WITH option keys of a sink that
// neither every sink nor its connector uses (a misspelt key would be
// ignored in silence). Keys Runnel stores itself (starting with '_') are
// never unknown.
func UnknownOptions(opts map[string]string) []string {
	c, ok := Lookup(strings.ToLower(opts["connector"]))
	if !ok || c.Known == nil {
		return nil
	}
	var out []string
	for k := range opts {
		if !commonOptions[k] && !strings.HasPrefix(k, "_") && !c.Known(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

var (
	registryMu sync.Mutex
	registry   = map[string]Connector{}
)

// Register makes a connector available under a WITH (connector = name).
func Register(name string, c Connector) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[name] = c
}

// Connectors lists the registered connector names.
func Connectors() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns a registered connector.
func Lookup(name string) (Connector, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	c, ok := registry[name]
	return c, ok
}

// ConnectorTable is the connector of CREATE SINK ... INTO a table: the
// meta node delivers each epoch as DML into the Runnel table named by
// OptInto (internal/metasrv), so it is not in the registry.
const ConnectorTable = "_table"

// Spec is a sink's WITH options, checked: what the planner needs.
type Spec struct {
	Connector string
	Type      string
	// Key is the primary_key option's column names (upsert).
	Key []string
	// ForceAppendOnly is force_append_only = 'true'.
	ForceAppendOnly bool
	// MaxPendingRows bounds the log store's backlog (log_store.max_pending_rows).
	MaxPendingRows int64
}

// DefaultMaxPendingRows is the default bound of a sink's undelivered
// backlog: ten million rows are a few hundred MB of log on object storage,
// hours of a busy sink's output while its target is down.
const DefaultMaxPendingRows = 10_000_000

// ParseSpec reads the connector-independent WITH options of CREATE SINK
// name.
func ParseSpec(name string, opts map[string]string) (*Spec, error) {
	s := &Spec{Connector: strings.ToLower(opts["connector"]), MaxPendingRows: DefaultMaxPendingRows}
	if s.Connector == "" {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: the connector option is required (WITH (connector = '...'), one of %s)", name, strings.Join(Connectors(), ", "))
	}
	if _, ok := Lookup(s.Connector); !ok && s.Connector != ConnectorTable {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "sink %q: unknown connector %q (supported: %s)", name, s.Connector, strings.Join(Connectors(), ", "))
	}
	s.Type = strings.ToLower(opts["type"])
	switch s.Type {
	case "":
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: the type option is required: 'append-only' or 'upsert'", name)
	case TypeAppendOnly, TypeUpsert:
	default:
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: type must be 'append-only' or 'upsert', not %q", name, opts["type"])
	}
	if v, ok := opts["force_append_only"]; ok {
		switch strings.ToLower(v) {
		case "true":
			s.ForceAppendOnly = true
		case "false":
		default:
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: force_append_only must be 'true' or 'false', not %q", name, v)
		}
		if s.ForceAppendOnly && s.Type != TypeAppendOnly {
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: force_append_only = 'true' needs type = 'append-only'", name)
		}
	}
	if pk := strings.TrimSpace(opts["primary_key"]); pk != "" {
		for _, k := range strings.Split(pk, ",") {
			k = strings.TrimSpace(k)
			if strings.HasPrefix(k, `"`) && strings.HasSuffix(k, `"`) && len(k) > 1 {
				k = k[1 : len(k)-1]
			} else {
				k = strings.ToLower(k)
			}
			if k == "" || slices.Contains(s.Key, k) {
				return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: invalid primary_key %q", name, pk)
			}
			s.Key = append(s.Key, k)
		}
	}
	if s.Type == TypeUpsert && len(s.Key) == 0 {
		return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: an upsert sink needs primary_key = 'col, ...' (the target's key)", name)
	}
	// RisingWave's delivery options. Every Runnel sink is decoupled by its
	// log store and commits each epoch, so sink_decouple and
	// commit_checkpoint_interval change nothing here; they are checked
	// for RisingWave's values. snapshot = 'false' (no backfill of the
	// current contents) is not implemented and refused.
	if v, ok := opts["sink_decouple"]; ok {
		switch strings.ToLower(v) {
		case "true", "false", "default":
		default:
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: sink_decouple must be 'true', 'false' or 'default', not %q", name, v)
		}
	}
	if v, ok := opts["commit_checkpoint_interval"]; ok {
		var n int64
		if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: commit_checkpoint_interval must be a positive integer, not %q", name, v)
		}
	}
	if v, ok := opts["snapshot"]; ok {
		switch strings.ToLower(v) {
		case "true":
		case "false":
			return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "sink %q: snapshot = 'false' is not supported (a sink always starts with its relation's current contents)", name)
		default:
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: snapshot must be 'true' or 'false', not %q", name, v)
		}
	}
	if v, ok := opts["log_store.max_pending_rows"]; ok {
		var n int64
		if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
			return nil, sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: log_store.max_pending_rows must be a positive integer, not %q", name, v)
		}
		s.MaxPendingRows = n
	}
	return s, nil
}
