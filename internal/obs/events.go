package obs

import (
	"context"
	"log/slog"
	"time"
)

// Structured log events (issue 17 item 7): one record per DDL statement,
// recovery, compaction job, GC cycle and slow barrier, so that a log
// pipeline can alert on them. Each record's message is the event name and
// its first attribute is event=<name>; the other keys are listed in
// docs/operations.md ("Log events") and are stable: add keys, never rename
// or remove one. Durations are float seconds under keys ending _seconds,
// sizes are bytes under keys ending _bytes.
const (
	EventDDL         = "ddl"
	EventRecovery    = "recovery"
	EventCompaction  = "compaction"
	EventGC          = "gc"
	EventSlowBarrier = "slow_barrier"
)

// Event logs one structured event at level.
func Event(log *slog.Logger, level slog.Level, name string, attrs ...slog.Attr) {
	if log == nil || !log.Enabled(context.Background(), level) {
		return
	}
	log.LogAttrs(context.Background(), level, name, append([]slog.Attr{slog.String("event", name)}, attrs...)...)
}

// Seconds is a duration attribute in float seconds.
func Seconds(key string, d time.Duration) slog.Attr { return slog.Float64(key, d.Seconds()) }
