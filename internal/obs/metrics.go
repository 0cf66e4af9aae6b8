package obs

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// Default is the process's registry of recorded series, with the Go
// runtime and process collectors. The server adds its scrape-time
// Collector to a registry of its own and serves both (httpapi).
var Default = prometheus.NewRegistry()

// latencyBuckets span 0.5 ms to about 65 s, doubling: barrier phases,
// statements and recovery phases all fall in it, from an idle epoch's
// commit to a recovery that rebuilds big views.
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 18)

var (
	barrierSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "runnel_barrier_duration_seconds",
		Help:    "Time of each phase of a barrier round: inject (graph lock to injected), collect (injected to every actor passed it), commit (storage commit of the epoch), total (inject start to committed).",
		Buckets: latencyBuckets,
	}, []string{"phase"})
	barrierInject  = barrierSeconds.WithLabelValues("inject")
	barrierCollect = barrierSeconds.WithLabelValues("collect")
	barrierCommit  = barrierSeconds.WithLabelValues("commit")
	barrierTotal   = barrierSeconds.WithLabelValues("total")

	epochsCommitted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "runnel_epochs_committed_total",
		Help: "Epochs committed by the barrier loop.",
	})
	epochsBehind = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "runnel_barrier_epochs_behind",
		Help: "Barriers injected whose epoch is not committed yet.",
	})

	recoveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runnel_recoveries_total",
		Help: "Recoveries by reason (user: RECOVER; actor_failure; barrier_failure; drop_timeout; panic; other), scope (all, database) and result (ok, failed).",
	}, []string{"reason", "scope", "result"})
	recoveryPhase = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "runnel_recovery_phase_seconds",
		Help:    "Time of each phase of a recovery: reset (actors stopped and joined, uncommitted writes discarded) and rebuild (actors started again from the committed epoch).",
		Buckets: latencyBuckets,
	}, []string{"phase"})
	recoveryReset   = recoveryPhase.WithLabelValues("reset")
	recoveryRebuild = recoveryPhase.WithLabelValues("rebuild")

	metaTxSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "runnel_metastore_transaction_seconds",
		Help:    "Time of each committed metastore transaction, BEGIN to COMMIT done (version deltas, job records, catalog changes).",
		Buckets: latencyBuckets,
	})
	metaTxFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "runnel_metastore_transaction_failures_total",
		Help: "Metastore transactions that did not commit (or whose commit is ambiguous).",
	})

	storageWrite = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runnel_storage_write_bytes_total",
		Help: "SST bytes written by kind: flush (a checkpoint's data, to the object store or inline in the metastore), compaction.",
	}, []string{"kind"})
	storageWriteFlush      = storageWrite.WithLabelValues("flush")
	storageWriteCompaction = storageWrite.WithLabelValues("compaction")
	storageRead            = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "runnel_storage_read_bytes_total",
		Help: "SST bytes read from the object store (block cache misses, compaction inputs).",
	})
	compactions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runnel_storage_compactions_total",
		Help: "Compaction jobs finished, by result (committed, aborted).",
	}, []string{"result"})
	compactionsCommitted = compactions.WithLabelValues("committed")
	compactionsAborted   = compactions.WithLabelValues("aborted")
	gcDeleted            = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "runnel_storage_gc_deleted_objects_total",
		Help: "Objects deleted by GC (deletion-queue fast path and full-listing GC).",
	})

	statementSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "runnel_statement_duration_seconds",
		Help:    "Time to run each statement that succeeded, by kind (its command tag without counts: SELECT, INSERT, CREATE MATERIALIZED VIEW, ...).",
		Buckets: latencyBuckets,
	}, []string{"kind"})
	statementErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "runnel_statement_errors_total",
		Help: "Statements that failed, by SQLSTATE class (the first two characters of the code).",
	}, []string{"sqlstate_class"})
	sessionsOpened = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "runnel_pgwire_sessions_opened_total",
		Help: "pgwire sessions that completed startup.",
	})

	sinkDelivery = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "runnel_sink_delivery_seconds",
		Help:    "Time from an epoch's start to its delivery to the sink's target, per sink.",
		Buckets: latencyBuckets,
	}, []string{"sink"})
)

func init() {
	Default.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		barrierSeconds, epochsCommitted, epochsBehind,
		recoveries, recoveryPhase,
		metaTxSeconds, metaTxFailed,
		storageWrite, storageRead, compactions, gcDeleted,
		statementSeconds, statementErrors, sessionsOpened,
		sinkDelivery,
	)
}

// BarrierInjected records that a barrier was injected (it is behind until
// BarrierCommitted or BarrierAbandoned).
func BarrierInjected() {
	if !Enabled {
		return
	}
	epochsBehind.Inc()
}

// BarrierAbandoned records that an injected barrier will not commit
// (recovery).
func BarrierAbandoned() {
	if !Enabled {
		return
	}
	epochsBehind.Set(0)
}

// BarrierCommitted records one committed barrier round by the instants it
// started injecting, was injected, was collected and was committed.
func BarrierCommitted(start, injected, collected, committed time.Time) {
	if !Enabled {
		return
	}
	barrierInject.Observe(injected.Sub(start).Seconds())
	barrierCollect.Observe(collected.Sub(injected).Seconds())
	barrierCommit.Observe(committed.Sub(collected).Seconds())
	barrierTotal.Observe(committed.Sub(start).Seconds())
	epochsCommitted.Inc()
	epochsBehind.Set(0)
}

// RecoveryDone records one recovery. reason is the free text recoveries
// are logged with; the series carries its class (RecoveryReason).
func RecoveryDone(reason string, database bool, reset, rebuild time.Duration, failed bool) {
	if !Enabled {
		return
	}
	scope, result := "all", "ok"
	if database {
		scope = "database"
	}
	if failed {
		result = "failed"
	}
	recoveries.WithLabelValues(RecoveryReason(reason), scope, result).Inc()
	if reset > 0 {
		recoveryReset.Observe(reset.Seconds())
	}
	if rebuild > 0 {
		recoveryRebuild.Observe(rebuild.Seconds())
	}
	epochsBehind.Set(0)
}

// RecoveryReason classifies a recovery's reason text into a bounded label.
func RecoveryReason(reason string) string {
	switch {
	case strings.HasPrefix(reason, "RECOVER statement"):
		return "user"
	case strings.HasPrefix(reason, "actor failure"):
		return "actor_failure"
	case strings.HasPrefix(reason, "DROP of"):
		return "drop_timeout"
	case strings.HasPrefix(reason, "panic in the barrier loop"):
		return "panic"
	case strings.HasPrefix(reason, "collect ") || strings.HasPrefix(reason, "commit epoch"):
		return "barrier_failure"
	}
	return "other"
}

// MetastoreTx records a metastore write transaction that committed after
// d, or failed.
func MetastoreTx(d time.Duration, failed bool) {
	if !Enabled {
		return
	}
	if failed {
		metaTxFailed.Inc()
		return
	}
	metaTxSeconds.Observe(d.Seconds())
}

// StorageFlushed counts n SST bytes a checkpoint wrote.
func StorageFlushed(n int) {
	if !Enabled {
		return
	}
	storageWriteFlush.Add(float64(n))
}

// StorageCompacted counts n SST bytes a compaction wrote.
func StorageCompacted(n int) {
	if !Enabled {
		return
	}
	storageWriteCompaction.Add(float64(n))
}

// StorageRead counts n SST bytes read from the object store.
func StorageRead(n int) {
	if !Enabled {
		return
	}
	storageRead.Add(float64(n))
}

// CompactionDone counts a finished compaction job.
func CompactionDone(committed bool) {
	if !Enabled {
		return
	}
	if committed {
		compactionsCommitted.Inc()
	} else {
		compactionsAborted.Inc()
	}
}

// GCDeleted counts n objects deleted by GC.
func GCDeleted(n int) {
	if !Enabled {
		return
	}
	gcDeleted.Add(float64(n))
}

// SessionOpened counts a pgwire session that completed startup.
func SessionOpened() {
	if !Enabled {
		return
	}
	sessionsOpened.Inc()
}

// StatementDone records a statement that succeeded with command tag tag
// after d.
func StatementDone(tag string, d time.Duration) {
	if !Enabled {
		return
	}
	statementSeconds.WithLabelValues(StatementKind(tag)).Observe(d.Seconds())
}

// StatementFailed counts a statement that failed with SQLSTATE code.
func StatementFailed(code string) {
	if !Enabled {
		return
	}
	class := "XX"
	if len(code) == 5 {
		class = code[:2]
	}
	statementErrors.WithLabelValues(class).Inc()
}

// StatementKind is a command tag without its counts ("INSERT 0 3" →
// "INSERT", "SELECT 5" → "SELECT", "CREATE MATERIALIZED VIEW" as is): the
// tags come from a fixed set, so the label is bounded. Anything that does
// not look like a tag is "OTHER".
func StatementKind(tag string) string {
	if tag == "" {
		return "SELECT" // a row-returning statement without its own tag
	}
	end := len(tag)
	for end > 0 && (tag[end-1] == ' ' || tag[end-1] >= '0' && tag[end-1] <= '9') {
		end--
	}
	kind := tag[:end]
	if kind == "" || len(kind) > 40 {
		return "OTHER"
	}
	for i := 0; i < len(kind); i++ {
		if c := kind[i]; c != ' ' && (c < 'A' || c > 'Z') {
			return "OTHER"
		}
	}
	return kind
}

// SinkDelivered records that sink delivered the epoch whose wall-clock
// start is epochStart.
func SinkDelivered(sink string, epochStart time.Time) {
	if !Enabled {
		return
	}
	sinkDelivery.WithLabelValues(sink).Observe(time.Since(epochStart).Seconds())
}

// ForgetSink drops a dropped sink's series.
func ForgetSink(sink string) { sinkDelivery.DeleteLabelValues(sink) }

// EpochTime is the wall-clock instant an epoch embeds (milliseconds
// shifted left by 16, see meta.nextEpoch).
func EpochTime(epoch uint64) time.Time { return time.UnixMilli(int64(epoch >> 16)) }

// WriteAmplification is (flush + compaction bytes written) / flush bytes
// written since the process started (1 before anything was compacted, 0
// before anything was written).
func WriteAmplification() float64 {
	flush := counterValue(storageWriteFlush)
	if flush == 0 {
		return 0
	}
	return (flush + counterValue(storageWriteCompaction)) / flush
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
