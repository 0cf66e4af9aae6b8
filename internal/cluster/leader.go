package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
)

// ErrFenced is matched (errors.Is) by every refusal of a commit or a
// renewal because this node's leadership term was superseded.
var ErrFenced = errors.New("meta leadership lost")

// ErrNotLeader refuses a fenced commit on a node that holds no term.
var ErrNotLeader = errors.New("this node is not the meta leader")

// FencedError says which term this node held and which one the store has.
type FencedError struct {
	Mine, Current uint64
	Holder        string
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("meta leadership lost: this node held term %d, but the meta store's term is now %d (held by %s); commit refused", e.Mine, e.Current, e.Holder)
}

func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// DefaultLeaseTTL is the lease of the meta leader and of every node's
// membership when none is configured. A lapsed lease lets a standby take
// over after at most this long; renewals run every third of it, so one
// missed renewal (a GC pause, a slow metastore) does not lose it.
const DefaultLeaseTTL = 10 * time.Second

// LeaderConfig configures a contender for the meta leadership.
type LeaderConfig struct {
	DB *metastore.DB
	// Holder names this node in the term row (e.g. "node 3 (meta@10.0.0.5:4566)").
	Holder string
	// TTL is the lease (default DefaultLeaseTTL).
	TTL time.Duration
	// Clock reads this node's clock (default time.Now).
	Clock func() time.Time
	Log   *slog.Logger
}

// Leader is one node's side of the meta leadership: it contends, holds a
// term while it leads, and fences its store's commits with it.
type Leader struct {
	cfg LeaderConfig

	mu   sync.Mutex
	term uint64        // 0: not leader
	lost chan struct{} // closed when the held term is lost
}

// LeaseInfo is the leadership as the store has it.
type LeaseInfo struct {
	Term    uint64
	Holder  string
	Since   time.Time
	Expires time.Time
}

// fillDefaults sets a lease, a clock and a logger left unset.
func fillDefaults(ttl *time.Duration, clock *func() time.Time, log **slog.Logger) {
	if *ttl <= 0 {
		*ttl = DefaultLeaseTTL
	}
	if *clock == nil {
		*clock = time.Now
	}
	if *log == nil {
		*log = slog.Default()
	}
}

// NewLeader returns a contender that holds nothing yet.
func NewLeader(cfg LeaderConfig) *Leader {
	fillDefaults(&cfg.TTL, &cfg.Clock, &cfg.Log)
	l := &Leader{cfg: cfg, lost: make(chan struct{})}
	close(l.lost) // nothing held, nothing to lose
	return l
}

// Term is the term this node leads in, 0 when it does not lead.
func (l *Leader) Term() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term
}

// Lost is closed when the term this node held is lost (and is closed
// while it holds none).
func (l *Leader) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

func (l *Leader) markLost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == 0 {
		return
	}
	l.cfg.Log.Error("meta leadership lost; stepping down", "term", l.term, "err", err)
	l.term = 0
	close(l.lost)
}

// Info reads the leadership from the store (zero when nobody ever led).
func Info(ctx context.Context, db *metastore.DB) (LeaseInfo, error) {
	var li LeaseInfo
	err := db.UnfencedTx(ctx, func(tx *metastore.Tx) error {
		var err error
		li, err = readLease(ctx, tx, "", "")
		return err
	})
	return li, err
}

func readLease(ctx context.Context, tx *metastore.Tx, termLock, leaseLock string) (LeaseInfo, error) {
	var li LeaseInfo
	var term int64
	var since int64
	err := tx.QueryRow(ctx, `SELECT term, holder, since_ms FROM cluster_meta_term WHERE id = 1`+lockSuffix(tx.Dialect(), termLock)).Scan(&term, &li.Holder, &since)
	if errors.Is(err, sql.ErrNoRows) {
		return LeaseInfo{}, nil
	}
	if err != nil {
		return li, fmt.Errorf("cluster: read meta term: %w", err)
	}
	li.Term, li.Since = uint64(term), fromMS(since)
	var exp int64
	if err := tx.QueryRow(ctx, `SELECT expires_ms FROM cluster_meta_lease WHERE id = 1`+lockSuffix(tx.Dialect(), leaseLock)).Scan(&exp); err != nil {
		return li, fmt.Errorf("cluster: read meta lease: %w", err)
	}
	li.Expires = fromMS(exp)
	return li, nil
}

// TryAcquire makes one attempt to lead: it takes over when nobody leads,
// when the lease has lapsed, or (force) in any case, raising the term by
// one. It returns whether this node leads now and the leadership as the
// store has it afterwards. A node that already leads renews instead.
func (l *Leader) TryAcquire(ctx context.Context, force bool) (bool, LeaseInfo, error) {
	if l.Term() != 0 {
		err := l.Renew(ctx)
		li, ierr := Info(ctx, l.cfg.DB)
		if err == nil {
			err = ierr
		}
		return err == nil, li, err
	}
	var got LeaseInfo
	var took bool
	err := l.cfg.DB.UnfencedTx(ctx, func(tx *metastore.Tx) error {
		took = false
		if err := boundIdle(ctx, tx, l.cfg.TTL); err != nil {
			return err
		}
		now := l.cfg.Clock()
		// A cheap look first: a standby polls, and must not lock the
		// term row (which every leader commit share-locks) for nothing.
		li, err := readLease(ctx, tx, "", "")
		if err != nil {
			return err
		}
		if li.Term != 0 && !force && now.Before(li.Expires) {
			got = li
			return nil
		}
		if li, err = readLease(ctx, tx, "FOR UPDATE", "FOR UPDATE"); err != nil {
			return err
		}
		if li.Term != 0 && !force && now.Before(li.Expires) {
			got = li
			return nil
		}
		next := li.Term + 1
		if li.Term == 0 {
			_, err = tx.Exec(ctx, `INSERT INTO cluster_meta_term (id, term, holder, since_ms) VALUES (1, $1, $2, $3)`, int64(next), l.cfg.Holder, toMS(now))
			if err == nil {
				_, err = tx.Exec(ctx, `INSERT INTO cluster_meta_lease (id, term, expires_ms) VALUES (1, $1, $2)`, int64(next), toMS(now.Add(l.cfg.TTL)))
			}
		} else {
			_, err = tx.Exec(ctx, `UPDATE cluster_meta_term SET term = $1, holder = $2, since_ms = $3 WHERE id = 1`, int64(next), l.cfg.Holder, toMS(now))
			if err == nil {
				_, err = tx.Exec(ctx, `UPDATE cluster_meta_lease SET term = $1, expires_ms = $2 WHERE id = 1`, int64(next), toMS(now.Add(l.cfg.TTL)))
			}
		}
		if err != nil {
			return fmt.Errorf("cluster: take meta leadership: %w", err)
		}
		if li.Term != 0 && now.Before(li.Expires) {
			l.cfg.Log.Warn("took the meta leadership over before its lease lapsed (forced)", "previous_term", li.Term, "previous_holder", li.Holder)
		}
		got = LeaseInfo{Term: next, Holder: l.cfg.Holder, Since: fromMS(toMS(now)), Expires: fromMS(toMS(now.Add(l.cfg.TTL)))}
		took = true
		return nil
	})
	if err != nil {
		return false, got, err
	}
	if took {
		l.mu.Lock()
		l.term = got.Term
		l.lost = make(chan struct{})
		l.mu.Unlock()
		l.cfg.Log.Info("leading the meta role", "term", got.Term, "holder", got.Holder)
	}
	return took, got, nil
}

// Renew extends the lease of the held term. It fails with ErrFenced (and
// marks the leadership lost) when the store's term is another.
func (l *Leader) Renew(ctx context.Context) error {
	mine := l.Term()
	if mine == 0 {
		return ErrNotLeader
	}
	err := l.cfg.DB.UnfencedTx(ctx, func(tx *metastore.Tx) error {
		if err := l.checkTerm(ctx, tx, mine); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE cluster_meta_lease SET expires_ms = $1 WHERE id = 1 AND term = $2`, toMS(l.cfg.Clock().Add(l.cfg.TTL)), int64(mine))
		return err
	})
	if errors.Is(err, ErrFenced) {
		l.markLost(err)
	}
	return err
}

// sqliteTermQuery is the fence's read on SQLite, compiled once (Prepare).
const sqliteTermQuery = `SELECT term, holder FROM cluster_meta_term WHERE id = 1`

// Prepare compiles the fence's query once, so that the check every commit
// runs costs one small read (SQLite; a no-op on PostgreSQL).
func (l *Leader) Prepare(ctx context.Context) error {
	return l.cfg.DB.Prepare(ctx, sqliteTermQuery)
}

// checkTerm refuses with a FencedError unless the store's term is mine.
// On PostgreSQL it share-locks the term row until the transaction ends
// (a takeover waits for it) and bounds the transaction's idle time in
// the same statement (boundIdle), so that a process stopped between the
// check and its COMMIT cannot hold a takeover up for longer than a lease.
func (l *Leader) checkTerm(ctx context.Context, tx *metastore.Tx, mine uint64) error {
	var term int64
	var holder string
	var err error
	if tx.Dialect() == metastore.Postgres {
		var set string
		err = tx.QueryRow(ctx, `SELECT term, holder, set_config('idle_in_transaction_session_timeout', $1, true) FROM cluster_meta_term WHERE id = 1 FOR SHARE`,
			idleSetting(l.cfg.TTL)).Scan(&term, &holder, &set)
	} else {
		err = tx.QueryRow(ctx, sqliteTermQuery).Scan(&term, &holder)
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("cluster: check meta term: %w", err)
	}
	if uint64(term) != mine {
		return &FencedError{Mine: mine, Current: uint64(term), Holder: holder}
	}
	return nil
}

// Fence is the metastore.Fence of a leader's store: a commit goes through
// only while the store's term is the one this node leads in (I1/I2: the
// version and the catalog have one writer). A refusal marks the
// leadership lost.
func (l *Leader) Fence(ctx context.Context, tx *metastore.Tx) error {
	mine := l.Term()
	if mine == 0 {
		return fmt.Errorf("commit refused: %w", ErrNotLeader)
	}
	if err := l.checkTerm(ctx, tx, mine); err != nil {
		if errors.Is(err, ErrFenced) {
			l.markLost(err)
		}
		return err
	}
	return nil
}

// Campaign contends until this node leads (or ctx ends), trying every
// third of the lease; force takes over at once.
func (l *Leader) Campaign(ctx context.Context, force bool) error {
	waiting := false
	for {
		took, li, err := l.TryAcquire(ctx, force)
		switch {
		case err != nil:
			l.cfg.Log.Warn("contending for the meta leadership failed; retrying", "err", err)
		case took:
			return nil
		case !waiting:
			waiting = true
			l.cfg.Log.Info("standby: another node leads the meta role", "term", li.Term, "holder", li.Holder, "lease_expires", li.Expires)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.cfg.TTL / 3):
		}
	}
}

// Lead is the leader's loop: every third of the lease it runs duty, then
// renews the lease, until the leadership is lost (or ctx ends). The duty
// comes first so that a leader resumed after a pause (SIGSTOP past its
// lease) tries a fenced commit before anything else: if a standby took
// over meanwhile, that commit is refused and the node steps down.
func (l *Leader) Lead(ctx context.Context, duty func(ctx context.Context) error) {
	lost := l.Lost()
	t := time.NewTicker(l.cfg.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lost:
			return
		case <-t.C:
		}
		if duty != nil {
			err := duty(ctx)
			switch {
			case err == nil || ctx.Err() != nil:
			case errors.Is(err, ErrFenced) || errors.Is(err, ErrNotLeader):
				l.cfg.Log.Error("meta leader's commit refused: another node leads now", "err", err)
			default:
				l.cfg.Log.Warn("meta leader duty failed; retrying", "err", err)
			}
		}
		if l.Term() == 0 {
			return
		}
		if err := l.Renew(ctx); err != nil && !errors.Is(err, ErrFenced) && ctx.Err() == nil {
			// Not refused, only failed (the store unreachable): retry;
			// the term stays safe, a standby may take over meanwhile.
			l.cfg.Log.Warn("renewing the meta lease failed; retrying", "err", err)
		}
	}
}

// Serve is a meta node's life: contend as a standby until this node
// leads, then Lead until the leadership is lost, then step down to
// standby and contend again; until ctx ends. onLead is called with each
// term won (it may be nil).
func (l *Leader) Serve(ctx context.Context, duty func(ctx context.Context) error, onLead func(term uint64)) {
	for ctx.Err() == nil {
		if err := l.Campaign(ctx, false); err != nil {
			return
		}
		if onLead != nil {
			onLead(l.Term())
		}
		l.Lead(ctx, duty)
		if ctx.Err() == nil {
			l.cfg.Log.Warn("stepped down to standby; contending for the meta leadership again")
		}
	}
}
