package httpapi

import (
	"context"
	"time"
)

// Backend is what the HTTP listener asks the server. Each method answers
// one JSON API under /api/ (the name in each comment); the server
// implements it from the same state the rw_catalog relations read, so the
// dashboard and SQL agree.
type Backend interface {
	// Overview: GET /api/overview.
	Overview(ctx context.Context) (Overview, error)
	// Relations: GET /api/relations.
	Relations(ctx context.Context) ([]Relation, error)
	// Graph: GET /api/graph?id=N — the stream graph of one view or sink.
	Graph(ctx context.Context, id int64) (Graph, error)
	// Actors: GET /api/actors.
	Actors(ctx context.Context) ([]Actor, error)
	// Barriers: GET /api/barriers.
	Barriers(ctx context.Context) ([]Barrier, error)
	// Storage: GET /api/storage; with check=true (GET
	// /api/storage?check=1) it also runs the storage check.
	Storage(ctx context.Context, check bool) (Storage, error)
	// Recoveries: GET /api/recoveries.
	Recoveries(ctx context.Context) ([]Recovery, error)
	// Sessions: GET /api/sessions.
	Sessions(ctx context.Context) ([]Session, error)
	// Cancel: POST /api/sessions/cancel?pid=N — cancels the session's
	// running statement; false when no such session.
	Cancel(ctx context.Context, pid uint32) (bool, error)
	// Connectors: GET /api/connectors — sources' and sinks' progress.
	Connectors(ctx context.Context) (Connectors, error)
}

// Overview is the dashboard's front page.
type Overview struct {
	Started        time.Time `json:"started"`
	CommittedEpoch uint64    `json:"committed_epoch"`
	// EpochAgeSeconds is how old the committed epoch is (wall clock).
	EpochAgeSeconds float64 `json:"epoch_age_seconds"`
	BarrierInterval string  `json:"barrier_interval"`
	Relations       int     `json:"relations"`
	Actors          int     `json:"actors"`
	Sessions        int     `json:"sessions"`
	Recoveries      int     `json:"recoveries"`
	CacheBytes      int64   `json:"cache_bytes"`
	CacheLimitBytes int64   `json:"cache_limit_bytes"`
}

// Relation is a table, view, source or sink with its size and freshness.
type Relation struct {
	ID       int64  `json:"id"`
	Database string `json:"database"`
	Schema   string `json:"schema"`
	Name     string `json:"name"`
	Kind     string `json:"kind"` // table, materialized view, view, source, sink, index
	// Rows and Bytes count the relation's committed rows and their key
	// and value bytes (views and tables; -1 for kinds without storage).
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"`
	// StateBytes counts the internal state tables of a job (aggregation
	// groups, join sides, ...).
	StateBytes int64 `json:"state_bytes"`
	// Status: "running", "creating", "recovering" (its database is being
	// rebuilt) or "" for kinds without a job.
	Status string `json:"status"`
	// FreshnessSeconds is the age of the epoch the relation's rows
	// reflect (every relation reflects the committed epoch).
	FreshnessSeconds float64 `json:"freshness_seconds"`
	Actors           int     `json:"actors"`
}

// Graph is a streaming job's plan by fragment, with live counters.
type Graph struct {
	ID        int64      `json:"id"`
	Name      string     `json:"name"`
	Fragments []Fragment `json:"fragments"`
}

// Fragment is one fragment of a job: its operators (EXPLAIN's lines),
// the fragments its exchanges read, and its actors' counters summed.
type Fragment struct {
	ID        int      `json:"id"`
	Dist      string   `json:"dist"`
	Operators []string `json:"operators"`
	Inputs    []int    `json:"inputs"`
	Actors    int      `json:"actors"`
	RowsIn    int64    `json:"rows_in"`
	RowsOut   int64    `json:"rows_out"`
	// RowsPerSecond is the output rate over the last few seconds (as
	// measured by the server between calls; 0 on the first).
	RowsPerSecond float64 `json:"rows_per_second"`
	// Blocked is the share (0..1) of its actors' time blocked on output
	// (back-pressure from downstream) since they started.
	Blocked float64 `json:"blocked"`
	Busy    float64 `json:"busy"`
}

// Actor is one running actor (as rw_actors).
type Actor struct {
	ID       int64   `json:"id"`
	Database string  `json:"database"`
	Job      string  `json:"job"`
	Fragment int     `json:"fragment"`
	Root     string  `json:"root"`
	State    string  `json:"state"`
	Seconds  float64 `json:"seconds"` // in State for so long
	RowsIn   int64   `json:"rows_in"`
	RowsOut  int64   `json:"rows_out"`
	// WaitingOn is the actor's await tree: the calls each of its
	// goroutines is in now, outermost first (stream.AwaitTree).
	WaitingOn string `json:"waiting_on"`
}

// Barrier is one committed barrier round.
type Barrier struct {
	Epoch     uint64    `json:"epoch"`
	Committed time.Time `json:"committed"`
	InjectMS  float64   `json:"inject_ms"`
	CollectMS float64   `json:"collect_ms"`
	CommitMS  float64   `json:"commit_ms"`
}

// Storage is the LSM's shape.
type Storage struct {
	VersionID        uint64       `json:"version_id"`
	CommittedEpoch   uint64       `json:"committed_epoch"`
	SafeEpoch        uint64       `json:"safe_epoch"`
	Tables           int          `json:"tables"`
	Levels           []Level      `json:"levels"`
	WriteBufferBytes int64        `json:"write_buffer_bytes"`
	PinnedVersions   int          `json:"pinned_versions"`
	Snapshots        int          `json:"snapshots"`
	DeletionQueue    int          `json:"deletion_queue"`
	Compactions      []Compaction `json:"compactions"`
	// Check is the storage check's summary (with check=1), Violations
	// what breaks I1.
	Check      string   `json:"check,omitempty"`
	Violations []string `json:"violations,omitempty"`
}

// Level is one LSM level.
type Level struct {
	Level   int    `json:"level"`
	SSTs    int    `json:"ssts"`
	Inline  int    `json:"inline"`
	Bytes   uint64 `json:"bytes"`
	Entries uint64 `json:"entries"`
}

// Compaction is a running compaction job.
type Compaction struct {
	ID          uint64  `json:"id"`
	OutputLevel int     `json:"output_level"`
	Inputs      int     `json:"inputs"`
	Seconds     float64 `json:"seconds"`
}

// Recovery is one past recovery (as rw_recovery_history).
type Recovery struct {
	Started   time.Time `json:"started"`
	Database  string    `json:"database"`
	Reason    string    `json:"reason"`
	ResetMS   float64   `json:"reset_ms"`
	RebuildMS float64   `json:"rebuild_ms"`
	Epoch     uint64    `json:"epoch"`
	Error     string    `json:"error"`
	// Abandoned names the actors the recovery abandoned because they did
	// not exit when aborted, and what each was doing.
	Abandoned string `json:"abandoned,omitempty"`
}

// Session is one pgwire connection.
type Session struct {
	PID         uint32    `json:"pid"`
	User        string    `json:"user"`
	Database    string    `json:"database"`
	Application string    `json:"application"`
	Remote      string    `json:"remote"`
	Connected   time.Time `json:"connected"`
	State       string    `json:"state"`
	Query       string    `json:"query"`
	// Seconds the running statement has run (0 when idle).
	Seconds float64 `json:"seconds"`
}

// Connectors lists sources and sinks.
type Connectors struct {
	Sources []Source `json:"sources"`
	Sinks   []Sink   `json:"sinks"`
}

// Source is one source's progress (as rw_source_stats).
type Source struct {
	Name      string `json:"name"`
	Rows      int64  `json:"rows"`
	Bytes     int64  `json:"bytes"`
	Malformed int64  `json:"malformed"`
	Status    string `json:"status"`
	CaughtUp  bool   `json:"caught_up"`
	// LagMessages: Kafka offsets behind the high watermark (summed over
	// partitions); LagBytes: CDC WAL bytes behind the upstream's end.
	// -1 when the connector does not report it.
	LagMessages int64 `json:"lag_messages"`
	LagBytes    int64 `json:"lag_bytes"`
}

// Sink is one sink's progress (as rw_sinks).
type Sink struct {
	Name           string  `json:"name"`
	Connector      string  `json:"connector"`
	Status         string  `json:"status"`
	PendingRows    int64   `json:"pending_rows"`
	PendingEpochs  int     `json:"pending_epochs"`
	DeliveredEpoch uint64  `json:"delivered_epoch"`
	DeliveredRows  int64   `json:"delivered_rows"`
	LagSeconds     float64 `json:"lag_seconds"`
	LastError      string  `json:"last_error"`
}
