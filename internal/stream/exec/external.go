package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/panics"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// ExternalStateSchema is the state table of an external connector's
// splits: split id → the split's opaque state (connector.Batch.State).
// Watermarks are kept in the same table under watermarkSplitKey.
func ExternalStateSchema(name string) state.Schema {
	return state.Schema{Name: name + " split states", Types: []types.Type{types.Varchar, types.Bytea}, PK: []int{0}}
}

// Tuning of the split goroutines.
var (
	// SplitPollInterval is how often an executor lists the source's splits
	// again, to pick up partitions added later.
	SplitPollInterval = 5 * time.Second
	// externalRetryMin and externalRetryMax bound the backoff between
	// attempts to open or read a failing split.
	externalRetryMin = 100 * time.Millisecond
	externalRetryMax = 5 * time.Second
	// externalQueue bounds the batches read ahead of the actor, over all
	// splits of one executor: a blocked downstream stops the reads
	// instead of buffering without bound.
	externalQueue = 16
	// skipLogEvery rate-limits the log line about skipped records (one per
	// interval per executor, counting the others).
	skipLogEvery = 10 * time.Second
)

// splitBatch is one Read's result, tagged with its split.
type splitBatch struct {
	split string
	b     connector.Batch
}

// splitFeed is one split's reader goroutine and its current stream.
type splitFeed struct {
	split connector.Split
	mu    sync.Mutex
	cur   connector.SplitStream // nil while (re)opening
	// caughtUp is the last Batch.CaughtUp the actor consumed.
	caughtUp bool
}

// externalFeed reads the splits of an external connector assigned to one
// actor (index of count) on goroutines — one per split plus one listing
// splits — that feed a bounded channel. The actor's loop never blocks on
// the network: it selects on barriers and that channel.
//
// Exactly once (I7/I8): the actor records, per split, the State of the last
// Batch whose changes it emitted; at a barrier it writes those states into
// the state table, committed in the same epoch as the rows. After recovery
// the executor is rebuilt and reopens every split at its committed state,
// so the changes of uncommitted epochs are read again and nothing twice.
// Batches queued but not consumed are simply dropped with the goroutines.
// A state is reported to SplitStream.Committed only once the engine's
// committed epoch reaches the epoch it was written in.
type externalFeed struct {
	name      string
	src       connector.External
	stats     *connector.SourceStats
	index     int
	count     int
	committed func() uint64
	log       *slog.Logger

	// states holds the newest consumed state of every split (loaded from
	// the state table, then advanced by consumed batches); dirty lists the
	// splits whose state changed since the last barrier.
	states map[string][]byte
	dirty  map[string]bool
	// pending are states written at barriers whose epoch is not yet known
	// to be committed, oldest first.
	pending []pendingAck

	mu     sync.Mutex
	splits map[string]*splitFeed
	out    chan splitBatch
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool

	lastSkipLog  time.Time
	unloggedSkip int
	// batches counts consumed batches (tests wait on it).
	batches atomic.Int64
}

type pendingAck struct {
	epoch  uint64
	states map[string][]byte
}

// ExternalConfig places an executor reading an external connector.
type ExternalConfig struct {
	// Name identifies the executor in logs and errors.
	Name string
	// Source names the source or table: its statistics
	// (connector.StatsFor) are shared by every executor reading it.
	Source string
	// Index and Count: this executor is actor Index of Count reading the
	// connector; it reads the splits whose Ordinal % Count is Index.
	Index, Count int
	// Committed reports the engine's committed epoch (CommittedEpochOf);
	// nil: states are never acknowledged upstream.
	Committed func() uint64
	Log       *slog.Logger
}

// newExternalFeed loads the committed split states from table.
func newExternalFeed(ctx context.Context, cfg ExternalConfig, src connector.External, table *state.Table) (*externalFeed, error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	name := cfg.Name
	f := &externalFeed{name: name, src: src, stats: connector.StatsFor(cfg.Source), index: cfg.Index, count: max(cfg.Count, 1),
		committed: cfg.Committed, log: log, states: map[string][]byte{}, dirty: map[string]bool{}, splits: map[string]*splitFeed{},
		out: make(chan splitBatch, externalQueue)}
	it, err := table.Iter(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: read split states: %w", name, err)
	}
	defer it.Close()
	for it.Next() {
		row := it.Row()
		if id := row[0].Str(); !strings.HasPrefix(id, watermarkKeyPrefix) {
			f.states[id] = []byte(row[1].Str())
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("%s: read split states: %w", name, err)
	}
	return f, nil
}

// start launches the goroutines, bound to ctx (the actor's: an aborted
// actor stops them).
func (f *externalFeed) start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil || f.closed {
		return
	}
	ctx, f.cancel = context.WithCancel(ctx)
	context.AfterFunc(ctx, f.stop) // an aborted actor's connections close too
	f.wg.Add(1)
	go f.discover(ctx)
}

// watermarkKeyPrefix starts the state-table keys under which executors
// keep their watermarks (no split id starts with a NUL byte).
const watermarkKeyPrefix = "\x00wm/"

// watermarkKey is the key of actor index's watermark.
func watermarkKey(index int) string { return fmt.Sprintf("%s%d", watermarkKeyPrefix, index) }

// CommittedEpochOf returns store's committed-epoch reader, or nil when it
// has none (then no state is ever acknowledged upstream).
func CommittedEpochOf(store state.Store) func() uint64 {
	if c, ok := store.(interface{ CommittedEpoch() uint64 }); ok {
		return c.CommittedEpoch
	}
	return nil
}

// rowIDs generates hidden row ids (_row_id) for DML and for rows of
// external connectors: unix milliseconds in the high bits and a sequence
// in the low 22, so ids grow across restarts and never repeat within one
// process.
var rowIDs struct {
	mu     sync.Mutex
	lastMS int64
	seq    int64
}

// NextRowID returns a fresh hidden row id.
func NextRowID() int64 {
	rowIDs.mu.Lock()
	defer rowIDs.mu.Unlock()
	ms := time.Now().UnixMilli()
	if ms <= rowIDs.lastMS {
		ms = rowIDs.lastMS
		rowIDs.seq++
		if rowIDs.seq >= 1<<22 {
			ms++
			rowIDs.seq = 0
		}
	} else {
		rowIDs.seq = 0
	}
	rowIDs.lastMS = ms
	return ms<<22 | rowIDs.seq
}

// stop ends the goroutines and closes the connector.
func (f *externalFeed) stop() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	cancel := f.cancel
	var open []connector.SplitStream
	for _, s := range f.splits {
		s.mu.Lock()
		if s.cur != nil {
			open = append(open, s.cur)
		}
		s.mu.Unlock()
	}
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	// stop also runs on its own goroutine (context.AfterFunc, when the
	// actor is aborted): a panic in the connector's Close is logged, never
	// the end of the process (I6).
	closeLogged := func(what string, close func() error) {
		err := panics.Catch(sourceCloseSite, close)
		if pe := (*panics.Error)(nil); errors.As(err, &pe) {
			f.log.Error("source close panicked", "source", f.name, "what", what, "err", err, "stack", string(pe.Stack))
		}
	}
	for _, s := range open {
		closeLogged("split", s.Close) // unblocks a Read that ignores ctx
	}
	f.wg.Wait()
	closeLogged("source", f.src.Close)
}

// discover lists the splits now and every SplitPollInterval, starting a
// reader goroutine for each new split assigned to this actor.
func (f *externalFeed) discover(ctx context.Context) {
	defer f.wg.Done()
	backoff := externalRetryMin
	for {
		var splits []connector.Split
		err := panics.Catch(sourceListSite, func() (err error) {
			splits, err = f.src.Splits(ctx)
			return err
		})
		wait := SplitPollInterval
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if pe := (*panics.Error)(nil); errors.As(err, &pe) {
				f.log.Error("source split listing panicked", "source", f.name, "err", err, "stack", string(pe.Stack))
			}
			f.stats.SplitFailing("(list)", err)
			wait, backoff = backoff, min(backoff*2, externalRetryMax)
		} else {
			f.stats.SplitHealthy("(list)")
			backoff = externalRetryMin
			f.mu.Lock()
			for _, sp := range splits {
				if sp.Ordinal%f.count != f.index || f.splits[sp.ID] != nil || f.closed {
					continue
				}
				sf := &splitFeed{split: sp}
				f.splits[sp.ID] = sf
				// The actor goroutine writes f.states; the committed state
				// is read here before any batch of this split exists.
				st := f.states[sp.ID]
				f.wg.Add(1)
				go f.read(ctx, sf, st)
			}
			f.mu.Unlock()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// read runs one split: open at state, Read until an error, back off,
// reopen at the state of the last batch sent.
func (f *externalFeed) read(ctx context.Context, sf *splitFeed, st []byte) {
	defer f.wg.Done()
	backoff := externalRetryMin
	id := sf.split.ID
	for ctx.Err() == nil {
		// The connector's code runs on this goroutine, outside the actor's
		// recover: a panic in it (a malformed record, a connector bug) is
		// this split's failure, logged and retried after the backoff like
		// any other (I9), never the end of the process.
		err := panics.Catch(sourceSplitSite, func() error { return f.readSplit(ctx, sf, &st, &backoff) })
		if ctx.Err() != nil {
			return
		}
		if pe := (*panics.Error)(nil); errors.As(err, &pe) {
			f.log.Error("source split panicked", "source", f.name, "split", id, "err", err, "stack", string(pe.Stack))
		}
		if err != nil {
			f.stats.SplitFailing(id, err)
			f.log.Warn("source split failed, retrying", "source", f.name, "split", id, "in", backoff, "err", err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, externalRetryMax)
	}
}

// sourceSplitSite and sourceListSite name the source goroutines for
// panics.Arm.
const (
	sourceSplitSite = "source.split"
	sourceListSite  = "source.list"
	sourceCloseSite = "source.close"
)

// readSplit opens the split at *st and sends its batches until an error,
// advancing *st to the state of the last batch sent.
func (f *externalFeed) readSplit(ctx context.Context, sf *splitFeed, st *[]byte, backoff *time.Duration) error {
	stream, err := f.src.OpenSplit(ctx, sf.split, *st)
	if err != nil {
		return err
	}
	sf.mu.Lock()
	sf.cur = stream
	sf.mu.Unlock()
	defer func() {
		sf.mu.Lock()
		sf.cur = nil
		sf.mu.Unlock()
		stream.Close()
	}()
	for {
		b, err := stream.Read(ctx)
		if err != nil {
			return err
		}
		f.stats.SplitHealthy(sf.split.ID)
		*backoff = externalRetryMin
		if b.State != nil {
			*st = b.State
		}
		select {
		case f.out <- splitBatch{split: sf.split.ID, b: b}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// consume takes a batch the actor received: it advances the split's state
// and counts and logs skipped records. It returns the changes to emit.
func (f *externalFeed) consume(sb splitBatch) *types.Chunk {
	f.batches.Add(1)
	if sb.b.State != nil {
		f.states[sb.split] = sb.b.State
		f.dirty[sb.split] = true
	}
	f.mu.Lock()
	if sf := f.splits[sb.split]; sf != nil {
		sf.caughtUp = sb.b.CaughtUp
	}
	f.mu.Unlock()
	f.stats.SplitRead(sb.split, &sb.b)
	f.stats.Note(sb.b.Notices)
	if n := len(sb.b.Skipped); n > 0 {
		f.stats.NoteSkipped(sb.b.Skipped)
		f.unloggedSkip += n
		if now := time.Now(); now.Sub(f.lastSkipLog) >= skipLogEvery {
			last := sb.b.Skipped[n-1]
			f.log.Warn("source skipped malformed records", "source", f.name, "count", f.unloggedSkip,
				"last", last.Where, "reason", last.Reason)
			f.lastSkipLog, f.unloggedSkip = now, 0
		}
	}
	if k := sb.b.Changes.Len(); k > 0 {
		f.stats.Rows.Add(int64(k))
		return &sb.b.Changes
	}
	return nil
}

// checkpoint writes the states that changed into table (before the
// table's Commit of the barrier) and remembers them for acknowledgement
// once epoch — the epoch the writes belong to — is committed.
func (f *externalFeed) checkpoint(table *state.Table, epoch uint64) {
	if len(f.dirty) == 0 {
		return
	}
	ack := pendingAck{epoch: epoch, states: make(map[string][]byte, len(f.dirty))}
	for id := range f.dirty {
		st := f.states[id]
		table.Insert(types.Row{types.DVarchar(id), types.DBytea(st)})
		ack.states[id] = st
	}
	clear(f.dirty)
	f.pending = append(f.pending, ack)
}

// acknowledge tells the streams about every state whose epoch is committed
// (I8: never before). Called at each barrier, after the table's commit.
func (f *externalFeed) acknowledge() {
	if f.committed == nil || len(f.pending) == 0 {
		return
	}
	c := f.committed()
	n := 0
	latest := map[string][]byte{}
	for n < len(f.pending) && f.pending[n].epoch <= c {
		for id, st := range f.pending[n].states {
			latest[id] = st
		}
		n++
	}
	f.pending = f.pending[n:]
	if len(latest) == 0 {
		return
	}
	ids := make([]string, 0, len(latest))
	for id := range latest {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range ids {
		sf := f.splits[id]
		if sf == nil {
			continue
		}
		sf.mu.Lock()
		if sf.cur != nil {
			sf.cur.Committed(latest[id])
		}
		sf.mu.Unlock()
	}
}

// caughtUp reports whether every split of this actor was caught up at its
// last consumed batch and nothing is queued.
func (f *externalFeed) caughtUp() bool {
	if len(f.out) > 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sf := range f.splits {
		if !sf.caughtUp {
			return false
		}
	}
	return true
}
