package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
)

// metricsCollector computes the scraped series (package obs, doc.go) from
// the server's state at scrape time: nothing is counted twice, and hot
// paths keep only the atomic counters they had (actor rows and state
// time, source rows).
type metricsCollector struct{ s *Server }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	mEpochAge   = desc("runnel_committed_epoch_age_seconds", "Age of the committed epoch by the wall clock it embeds: how stale what queries see is.")
	mActors     = desc("runnel_actors", "Running actors by state (as rw_catalog.rw_actors).", "state")
	mFragActors = desc("runnel_fragment_actors", "Running actors per fragment of a streaming job.", "streaming_job", "fragment")
	mFragIn     = desc("runnel_fragment_rows_in_total", "Rows the fragment's actors received from exchanges (resets when the job's actors are rebuilt).", "streaming_job", "fragment")
	mFragOut    = desc("runnel_fragment_rows_out_total", "Rows the fragment's actors emitted (resets when the job's actors are rebuilt).", "streaming_job", "fragment")
	mFragState  = desc("runnel_fragment_state_seconds_total", "Time the fragment's actors spent per state class: busy, idle (waiting for input), aligning (barrier alignment), blocked (back-pressure).", "streaming_job", "fragment", "class")
	mCacheBytes = desc("runnel_streaming_cache_bytes", "Bytes held by the streaming operators' caches.")
	mCacheLimit = desc("runnel_streaming_cache_limit_bytes", "The streaming operators' cache budget.")
	mCacheEvict = desc("runnel_streaming_cache_evictions_total", "Entries evicted from the streaming operators' caches.")
	mSSTs       = desc("runnel_storage_ssts", "SSTs in the current version, per LSM level.", "level")
	mSSTBytes   = desc("runnel_storage_sst_bytes", "Bytes of the SSTs in the current version, per LSM level.", "level")
	mWriteBuf   = desc("runnel_storage_write_buffer_bytes", "Ingested but uncommitted data held in memory.")
	mPinned     = desc("runnel_storage_pinned_versions", "Older versions pinned by readers (their SSTs wait for GC).")
	mCompRun    = desc("runnel_storage_compactions_running", "Compaction jobs running.")
	mQueue      = desc("runnel_storage_deletion_queue_objects", "Objects on the durable deletion queue, waiting for GC.")
	mWriteAmp   = desc("runnel_storage_write_amplification_ratio", "(flush + compaction bytes written) / flush bytes written, since the process started.")
	mSrcRows    = desc("runnel_source_rows_total", "Rows a source delivered.", "source")
	mSrcBytes   = desc("runnel_source_bytes_total", "Bytes of the records a source read (connectors that report it).", "source")
	mSrcBad     = desc("runnel_source_malformed_records_total", "Malformed records a source skipped.", "source")
	mSrcUp      = desc("runnel_source_up", "1 while every split of the source reads, 0 while one retries.", "source")
	mSrcLagMsg  = desc("runnel_source_lag_messages", "Kafka: offsets behind the high watermark (last stable offset), summed over partitions.", "source")
	mSrcLagB    = desc("runnel_source_lag_bytes", "postgres-cdc: WAL bytes behind the upstream's WAL end.", "source")
	mSinkRows   = desc("runnel_sink_pending_rows", "Rows in the sink's log not delivered yet (backlog).", "sink")
	mSinkEpochs = desc("runnel_sink_pending_epochs", "Committed epochs the sink has not delivered yet.", "sink")
	mSinkDone   = desc("runnel_sink_delivered_rows_total", "Changes the sink delivered since the process started.", "sink")
	mSinkUp     = desc("runnel_sink_up", "1 while the sink delivers, 0 while it retries or is stopped.", "sink")
	mSinkLag    = desc("runnel_sink_lag_seconds", "Age of the last delivered epoch while epochs are pending (0 when caught up).", "sink")
	mSessions   = desc("runnel_pgwire_sessions", "Open pgwire sessions, by state (active, idle).", "state")
	mRelations  = desc("runnel_relations", "Relations by kind.", "kind")
)

// Describe sends nothing: the collector is unchecked (its label values
// change with the catalog).
func (c *metricsCollector) Describe(chan<- *prometheus.Desc) {}

func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(mEpochAge, epochAge(s.epochs.CommittedEpoch()))

	// Actors, by state and by fragment (job, fragment: bounded by the
	// catalog, never per actor).
	type frag struct {
		job string
		f   int
	}
	type fragSums struct {
		n       int
		in, out int64
		inState [4]time.Duration
	}
	byState := map[string]int{}
	byFrag := map[frag]*fragSums{}
	for _, a := range s.actors.Actors() {
		byState[a.State]++
		k := frag{a.Job, a.Fragment}
		fs := byFrag[k]
		if fs == nil {
			fs = &fragSums{}
			byFrag[k] = fs
		}
		fs.n++
		fs.in += a.RowsIn
		fs.out += a.RowsOut
		for i, d := range a.InState {
			fs.inState[i] += d
		}
	}
	for st, n := range byState {
		gauge(mActors, float64(n), strings.ReplaceAll(st, " ", "_"))
	}
	for k, fs := range byFrag {
		f := strconv.Itoa(k.f)
		gauge(mFragActors, float64(fs.n), k.job, f)
		counter(mFragIn, float64(fs.in), k.job, f)
		counter(mFragOut, float64(fs.out), k.job, f)
		for i, d := range fs.inState {
			counter(mFragState, d.Seconds(), k.job, f, stream.StateClassNames[i])
		}
	}

	b := exec.DefaultCacheBudget()
	gauge(mCacheBytes, float64(b.Used()))
	gauge(mCacheLimit, float64(b.Limit()))
	counter(mCacheEvict, float64(b.Evictions()))

	st := s.store.Stats()
	for l, ls := range st.Levels {
		gauge(mSSTs, float64(ls.SSTs), strconv.Itoa(l))
		gauge(mSSTBytes, float64(ls.Bytes), strconv.Itoa(l))
	}
	gauge(mWriteBuf, float64(st.WriteBufferBytes))
	gauge(mPinned, float64(st.PinnedVersions))
	gauge(mCompRun, float64(len(st.Compactions)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if q, err := s.store.DeletionQueueLen(ctx); err == nil {
		gauge(mQueue, float64(q))
	}
	gauge(mWriteAmp, obs.WriteAmplification())

	for _, src := range connector.AllStats() {
		counter(mSrcRows, float64(src.Rows), src.Name)
		counter(mSrcBytes, float64(src.Bytes), src.Name)
		counter(mSrcBad, float64(src.Skipped), src.Name)
		up := 0.0
		if src.Status == "running" {
			up = 1
		}
		gauge(mSrcUp, up, src.Name)
		if src.LagMessages >= 0 {
			gauge(mSrcLagMsg, float64(src.LagMessages), src.Name)
		}
		if src.LagBytes >= 0 {
			gauge(mSrcLagB, float64(src.LagBytes), src.Name)
		}
	}
	for _, sk := range s.sinkStatuses() {
		name := sk.rel.Name
		gauge(mSinkRows, float64(sk.st.PendingRows), name)
		gauge(mSinkEpochs, float64(sk.st.PendingEpochs), name)
		counter(mSinkDone, float64(sk.st.DeliveredRows), name)
		up := 0.0
		if sk.status == "running" {
			up = 1
		}
		gauge(mSinkUp, up, name)
		lag := 0.0
		if sk.st.PendingEpochs > 0 && sk.st.Delivered != 0 {
			lag = epochAge(sk.st.Delivered)
		}
		gauge(mSinkLag, lag, name)
	}

	sessions := map[string]int{"active": 0, "idle": 0}
	for _, p := range s.pg.Sessions() {
		sessions[p.State]++
	}
	for state, n := range sessions {
		gauge(mSessions, float64(n), state)
	}
	kinds := map[string]int{}
	for _, r := range s.catalog.Relations(func(r *catalog.Relation) bool { return r.Kind != catalog.KindSystem }) {
		kinds[r.Kind.String()]++
	}
	for k, n := range kinds {
		gauge(mRelations, float64(n), strings.ReplaceAll(k, " ", "_"))
	}
}
