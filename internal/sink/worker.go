package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/obs"
	"github.com/runneldb/runnel/internal/panics"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/stream/state"
	"github.com/runneldb/runnel/internal/types"
)

// WorkerConfig is what a Worker needs.
type WorkerConfig struct {
	Name string
	// Store holds the log; LogTable is its id, LogSchema its schema
	// (exec.SinkLogSchema over the sink job's physical row).
	Store     state.Store
	LogTable  storage.TableID
	LogSchema state.Schema
	// Columns lists the positions in the job's physical row of the
	// delivered columns (the visible ones).
	Columns []int
	// Committed returns the last committed epoch.
	Committed func() uint64
	Target    Target
	// MaxPendingRows bounds the backlog (exec.SinkLog.OverBound).
	MaxPendingRows int64
	Log            *slog.Logger
}

// Worker drains one sink's log store into its target (see doc.go). It
// implements exec.SinkLog for the sink's executors; it lives as long as
// the sink, across recoveries of the sink's job.
type Worker struct {
	cfg WorkerConfig

	mu sync.Mutex
	// pending counts the rows written to the log per epoch and not yet
	// handled; through is the last epoch every row of which was handled
	// (delivered, or already in the target).
	pending map[uint64]int64
	through uint64
	// truncate lists delivered log rows to delete (taken by writer 0).
	truncate []exec.SinkLogRange
	// rescan: read the log from its start at the next round (after a
	// recovery may have lost truncations, and at startup).
	rescan bool
	// below is closed (and replaced) whenever the backlog shrinks.
	below chan struct{}
	stat  Status
	// heldRows counts the rows of held (below): in the backlog, but not
	// held against its bound, since the target has them and will make
	// them durable by itself (its time bound); bounding them would stall
	// the barriers that bring that time.
	heldRows int64

	// For a Buffered target (buffered non-nil), on the worker's goroutine:
	// handed is the last epoch handed to the target since it was opened,
	// held lists the epochs handed and not yet durable, oldest first.
	buffered Buffered
	handed   uint64
	held     []heldEpoch

	cancel context.CancelFunc
	done   chan struct{}
}

// heldEpoch is an epoch a Buffered target was handed and does not hold
// durably yet: its rows and log ranges wait for Durable.
type heldEpoch struct {
	epoch  uint64
	rows   int64
	truncs []exec.SinkLogRange
}

// Status is a worker's progress, for rw_catalog.rw_sinks.
type Status struct {
	// Delivered is the last epoch the target holds, DeliveredRows the
	// changes delivered by this process.
	Delivered     uint64
	DeliveredRows int64
	PendingRows   int64
	PendingEpochs int
	// LastError is the last delivery failure ("" once an epoch is
	// delivered again); Retries counts consecutive failures.
	LastError string
	Retries   int
}

// pollInterval is how often the worker looks for a newly committed epoch:
// an atomic read, far below the 1 s default barrier interval.
const pollInterval = 10 * time.Millisecond

// Backoff between delivery attempts while a target fails.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 10 * time.Second
)

// batchRows is how many changes are handed to a Txn at a time.
const batchRows = 4096

// NewWorker returns a worker; Start runs it.
func NewWorker(cfg WorkerConfig) *Worker {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxPendingRows <= 0 {
		cfg.MaxPendingRows = DefaultMaxPendingRows
	}
	w := &Worker{cfg: cfg, pending: map[uint64]int64{}, rescan: true, below: make(chan struct{})}
	w.buffered, _ = cfg.Target.(Buffered)
	return w
}

// Start runs the worker's goroutine.
func (w *Worker) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		w.run(ctx)
	}()
}

// Stop stops the worker and waits for its goroutine to end (I3: the log
// may be purged only after this returns).
func (w *Worker) Stop() {
	obs.ForgetSink(w.cfg.Name)
	if w.cancel == nil {
		return
	}
	w.cancel()
	<-w.done
	if err := w.cfg.Target.Close(); err != nil {
		w.cfg.Log.Warn("sink: close target", "sink", w.cfg.Name, "err", err)
	}
}

// Status returns the worker's progress.
func (w *Worker) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stat
	s.PendingRows, s.PendingEpochs = 0, 0
	for e, n := range w.pending {
		if e > w.through && n > 0 {
			s.PendingRows += n
			s.PendingEpochs++
		}
	}
	return s
}

// Through is the last committed epoch the worker has handled: every
// epoch up to it is delivered (or held by a Buffered target).
func (w *Worker) Through() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.through
}

// Written implements exec.SinkLog.
func (w *Worker) Written(epoch uint64, _ int, n int64) {
	w.mu.Lock()
	w.pending[epoch] += n
	w.mu.Unlock()
}

// Truncations implements exec.SinkLog.
func (w *Worker) Truncations() []exec.SinkLogRange {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.truncate
	w.truncate = nil
	return out
}

// OverBound implements exec.SinkLog.
func (w *Worker) OverBound() bool {
	s := w.Status()
	w.mu.Lock()
	held := w.heldRows
	w.mu.Unlock()
	return s.PendingRows-held > w.cfg.MaxPendingRows
}

// WaitBelowBound implements exec.SinkLog.
func (w *Worker) WaitBelowBound(ctx context.Context) error {
	for {
		w.mu.Lock()
		ch := w.below
		w.mu.Unlock()
		if !w.OverBound() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Rebuilt tells the worker that the sink's job was rebuilt by a recovery,
// which may have discarded the epoch carrying truncations: the next round
// reads the log from its start and finds them again.
func (w *Worker) Rebuilt() {
	w.mu.Lock()
	w.rescan = true
	w.mu.Unlock()
}

// handled records that every epoch up to through was handled: their
// pending counts go, and executors waiting for the backlog to shrink wake.
func (w *Worker) handled(through uint64, rows int64, delivered uint64, truncs []exec.SinkLogRange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if through > w.through {
		w.through = through
	}
	for e := range w.pending {
		if e <= w.through {
			delete(w.pending, e)
		}
	}
	w.truncate = append(w.truncate, truncs...)
	w.stat.DeliveredRows += rows
	if delivered > w.stat.Delivered {
		if w.stat.Delivered != 0 {
			// Not the first: that one may be what the target already
			// held before this process started.
			obs.SinkDelivered(w.cfg.Name, obs.EpochTime(delivered))
		}
		w.stat.Delivered = delivered
	}
	close(w.below)
	w.below = make(chan struct{})
}

// deliverSite names the sink workers' units of work for panics.Arm.
const deliverSite = "sink.deliver"

// run delivers until ctx ends. The target's code runs on this goroutine,
// outside any actor: a panic in it (a connector bug, a value it cannot
// encode) is a delivery failure like any other — logged with its stack,
// shown in rw_sinks, retried after the backoff (I6, I9). The epoch stays in
// the log store until a round delivers it (I8).
func (w *Worker) run(ctx context.Context) {
	backoff := retryMin
	opened := false
	var targetHas uint64 // the last epoch the target records it holds
	var seen uint64
	for {
		if !opened {
			var has uint64
			err := panics.Catch(deliverSite, func() (err error) {
				has, err = w.cfg.Target.Open(ctx)
				return err
			})
			if err == nil {
				opened, targetHas = true, has
				w.mu.Lock()
				if has > w.stat.Delivered {
					w.stat.Delivered = has
				}
				w.mu.Unlock()
			} else if !w.failed(ctx, err, &backoff) {
				return
			} else {
				continue
			}
		}
		committed := w.cfg.Committed()
		w.mu.Lock()
		rescan := w.rescan
		w.rescan = false
		w.mu.Unlock()
		if rescan && w.handed > 0 {
			// A rescan reads the log from its start and would hand the
			// target again epochs it buffers: it starts afresh (the
			// rescan follows the reopening).
			w.dropBuffer()
			w.Rebuilt()
			opened = false
			continue
		}
		if committed <= seen && !rescan {
			select {
			case <-time.After(pollInterval):
				continue
			case <-ctx.Done():
				return
			}
		}
		if rescan {
			if err := panics.Catch(deliverSite, func() error { return w.count(ctx, committed) }); err != nil {
				w.Rebuilt()
				if !w.failed(ctx, err, &backoff) {
					return
				}
				continue
			}
		}
		err := panics.Catch(deliverSite, func() error { return w.round(ctx, committed, rescan, targetHas) })
		if err == nil {
			seen = committed
			backoff = retryMin
			w.mu.Lock()
			w.stat.LastError, w.stat.Retries = "", 0
			w.mu.Unlock()
			continue
		}
		if rescan {
			w.Rebuilt()
		}
		// Reconnect before the next attempt: the connection may be broken
		// (a Buffered target drops what it holds: dropBuffer).
		w.dropBuffer()
		opened = false
		if !w.failed(ctx, err, &backoff) {
			return
		}
	}
}

// dropBuffer closes the target, which drops the epochs a Buffered one
// holds: the next round reads them from the log again (they were not
// truncated, I8).
func (w *Worker) dropBuffer() {
	_ = w.cfg.Target.Close()
	w.handed, w.held = 0, nil
	w.mu.Lock()
	w.heldRows = 0
	w.mu.Unlock()
}

// hold records that the Buffered target was handed epoch (rows changes,
// the log ranges truncs) and releases what it made durable.
func (w *Worker) hold(ctx context.Context, epoch uint64, rows int64, truncs []exec.SinkLogRange) error {
	w.handed = epoch
	w.held = append(w.held, heldEpoch{epoch: epoch, rows: rows, truncs: truncs})
	w.mu.Lock()
	w.heldRows += rows
	w.mu.Unlock()
	return w.release(ctx)
}

// release hands to handled the held epochs the Buffered target holds
// durably, all in one call: their truncations reach the log together, so
// a crash leaves either all or none of one file's epochs in the log and
// the target, handed them again, writes the same files (I8).
func (w *Worker) release(ctx context.Context) error {
	d := w.buffered.Durable()
	n := 0
	var rows int64
	var truncs []exec.SinkLogRange
	for n < len(w.held) && w.held[n].epoch <= d {
		rows += w.held[n].rows
		truncs = append(truncs, w.held[n].truncs...)
		n++
	}
	if n == 0 {
		return nil
	}
	last := w.held[n-1].epoch
	w.held = w.held[n:]
	if h := deliveredHook.Load(); h != nil {
		(*h)(ctx, w.cfg.Name, last)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.heldRows -= rows
	w.mu.Unlock()
	w.handled(last, rows, last, truncs)
	return nil
}

// failed records a delivery failure and sleeps the backoff; false when the
// worker is stopping.
func (w *Worker) failed(ctx context.Context, err error, backoff *time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	w.mu.Lock()
	w.stat.LastError = err.Error()
	w.stat.Retries++
	retries := w.stat.Retries
	w.mu.Unlock()
	if pe := (*panics.Error)(nil); errors.As(err, &pe) {
		w.cfg.Log.Error("sink: delivery panicked; retrying", "sink", w.cfg.Name, "err", err, "stack", string(pe.Stack))
	}
	if retries == 1 || retries%20 == 0 {
		w.cfg.Log.Warn("sink: delivery failed; retrying", "sink", w.cfg.Name, "err", err, "retries", retries)
	}
	select {
	case <-time.After(*backoff):
	case <-ctx.Done():
		return false
	}
	*backoff = min(*backoff*2, retryMax)
	return true
}

func (w *Worker) logTable(epoch uint64) *state.Table {
	return state.New(w.cfg.LogTable, w.cfg.LogSchema, w.cfg.Store, epoch)
}

func logFrom(epoch uint64, width int) types.Row {
	r := make(types.Row, width)
	r[0], r[1], r[2] = types.DInt64(int64(epoch)), types.DInt32(0), types.DInt64(0)
	return r
}

// count recomputes the backlog per epoch from the log at committed (at
// startup, when the counts of earlier processes are unknown).
func (w *Worker) count(ctx context.Context, committed uint64) error {
	w.mu.Lock()
	through := w.through
	w.mu.Unlock()
	it, err := w.logTable(committed).IterFrom(ctx, nil, logFrom(through+1, len(w.cfg.LogSchema.Types)))
	if err != nil {
		return err
	}
	defer it.Close()
	counts := map[uint64]int64{}
	for it.Next() {
		counts[uint64(it.Row()[0].Int())]++
	}
	if err := it.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	for e, n := range counts {
		if e > w.through {
			w.pending[e] = n
		}
	}
	w.mu.Unlock()
	return nil
}

// round delivers every committed epoch after the last handled one, reading
// the log at committed (from its start when rescan, to find delivered rows
// whose truncation a recovery lost). Epochs the target already has
// (targetHas) are skipped but truncated.
func (w *Worker) round(ctx context.Context, committed uint64, rescan bool, targetHas uint64) error {
	w.mu.Lock()
	through := w.through
	w.mu.Unlock()
	from := max(through, w.handed) + 1
	if rescan {
		from = 0
	}
	it, err := w.logTable(committed).IterFrom(ctx, nil, logFrom(from, len(w.cfg.LogSchema.Types)))
	if err != nil {
		return err
	}
	defer it.Close()

	var (
		epoch   uint64 // the epoch being read
		txn     Txn    // its delivery; nil when it is skipped
		batch   []Change
		rows    int64
		truncs  []exec.SinkLogRange
		stale   []exec.SinkLogRange // rows of handled epochs still in the log
		writer  = -1
		lastSeq int64
	)
	defer func() {
		if txn != nil {
			txn.Rollback()
		}
	}()
	addRange := func(list *[]exec.SinkLogRange) {
		if writer >= 0 {
			*list = append(*list, exec.SinkLogRange{Epoch: epoch, Writer: writer, Count: lastSeq + 1})
		}
	}
	flush := func() error {
		if txn == nil || len(batch) == 0 {
			batch = batch[:0]
			return nil
		}
		err := txn.Write(ctx, batch)
		rows += int64(len(batch))
		batch = batch[:0]
		return err
	}
	finish := func() error {
		if epoch == 0 {
			return nil
		}
		if epoch <= through {
			addRange(&stale)
			w.handled(0, 0, 0, stale)
			stale = nil
			return nil
		}
		if epoch <= w.handed {
			// I8: a Buffered target holds it, not durably yet (run drops
			// the buffer before a rescan, so this is a guard).
			return nil
		}
		addRange(&truncs)
		if err := flush(); err != nil {
			return err
		}
		delivered := uint64(0)
		if txn != nil {
			CrashPoint(PointBeforeCommit, w.cfg.Name)
			if err := txn.Commit(ctx); err != nil {
				txn = nil
				return fmt.Errorf("sink %s: commit epoch %d: %w", w.cfg.Name, epoch, err)
			}
			txn = nil
			delivered = epoch
			if w.buffered != nil {
				// I8: the log keeps the epoch until the target says it
				// holds it durably.
				err := w.hold(ctx, epoch, rows, truncs)
				truncs, rows = nil, 0
				return err
			}
			CrashPoint(PointAfterCommit, w.cfg.Name)
			if h := deliveredHook.Load(); h != nil {
				// Test seam: the target has the epoch, the log still has
				// its rows (a crash at this point).
				(*h)(ctx, w.cfg.Name, epoch)
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		// I8: the epoch is in the target; only now may its log rows go.
		w.handled(epoch, rows, delivered, truncs)
		truncs, rows = nil, 0
		return nil
	}
	for it.Next() {
		r := it.Row()
		e := uint64(r[0].Int())
		wr := int(r[1].Int())
		if e != epoch {
			if err := finish(); err != nil {
				return err
			}
			epoch, writer = e, -1
			if e > through && e > targetHas && e > w.handed {
				if txn, err = w.cfg.Target.Begin(ctx, e); err != nil {
					txn = nil
					return fmt.Errorf("sink %s: begin epoch %d: %w", w.cfg.Name, e, err)
				}
			}
		}
		if wr != writer {
			if e <= through {
				addRange(&stale)
			} else {
				addRange(&truncs)
			}
			writer = wr
		}
		lastSeq = r[2].Int()
		if e <= through || txn == nil {
			continue
		}
		row := make(types.Row, len(w.cfg.Columns))
		for i, c := range w.cfg.Columns {
			row[i] = r[exec.SinkLogPrefix+c]
		}
		batch = append(batch, Change{Op: types.Op(r[3].Int()), Row: row})
		if len(batch) >= batchRows {
			if err := flush(); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if err := finish(); err != nil {
		return err
	}
	if w.buffered != nil {
		if err := w.buffered.Advance(ctx, committed); err != nil {
			return fmt.Errorf("sink %s: %w", w.cfg.Name, err)
		}
		if err := w.release(ctx); err != nil {
			return err
		}
		if len(w.held) > 0 {
			// Handled up to the oldest epoch the target still buffers.
			w.handled(w.held[0].epoch-1, 0, 0, nil)
			return nil
		}
	}
	// Everything committed is handled, including epochs that wrote nothing.
	w.handled(committed, 0, 0, nil)
	return nil
}

// deliveredHook, when set, is called after a target committed an epoch and
// before its log rows are released for truncation.
var deliveredHook atomic.Pointer[func(ctx context.Context, sink string, epoch uint64)]

// SetDeliveredHook installs a process-wide test hook called right after a
// target committed an epoch, before the worker records it (nil removes
// it). A hook that blocks until ctx is done simulates a crash between the
// target's commit and the log's truncation.
func SetDeliveredHook(h func(ctx context.Context, sink string, epoch uint64)) {
	if h == nil {
		deliveredHook.Store(nil)
		return
	}
	deliveredHook.Store(&h)
}

// ErrClosed is returned by targets used after Close.
var ErrClosed = errors.New("sink target closed")
