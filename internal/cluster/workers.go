package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/metastore"
)

// Node states in cluster_worker_node.
const (
	StateRunning = "running"
	// StateExpired: the node's lease lapsed and the meta leader fenced it;
	// its row stays for ExpiredRetention so that operators see what left.
	StateExpired = "expired"
)

// ExpiredRetention is how long an expired node's row is kept.
const ExpiredRetention = time.Hour

// ErrNodeExpired is returned by a heartbeat of a node that the meta
// leader already marked expired.
var ErrNodeExpired = errors.New("this node's membership lease lapsed and the meta leader marked it expired")

// Node is one row of cluster_worker_node.
type Node struct {
	ID          int64
	Host        string
	Port        int
	Roles       []string
	State       string
	Parallelism int
	StartedAt   time.Time
	Heartbeat   time.Time
	Expires     time.Time
}

// MemberConfig describes this node.
type MemberConfig struct {
	DB          *metastore.DB
	Host        string
	Port        int
	Roles       []string
	Parallelism int
	// TTL is the membership lease (default DefaultLeaseTTL).
	TTL   time.Duration
	Clock func() time.Time
	Log   *slog.Logger
}

// Member is this node's registration, kept alive by Heartbeat.
type Member struct {
	cfg     MemberConfig
	started time.Time

	mu sync.Mutex
	id int64
}

// Register inserts this node as running, under a new id.
func Register(ctx context.Context, cfg MemberConfig) (*Member, error) {
	fillDefaults(&cfg.TTL, &cfg.Clock, &cfg.Log)
	m := &Member{cfg: cfg, started: cfg.Clock()}
	if err := m.register(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// register allocates the next id (ids are never reused: rows are kept
// while they are the largest) and inserts the row. Two nodes registering
// at once may pick the same id; the loser's insert fails and it retries.
func (m *Member) register(ctx context.Context) error {
	m.mu.Lock()
	host, port := m.cfg.Host, m.cfg.Port
	m.mu.Unlock()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		var id int64
		err := m.cfg.DB.UnfencedTx(ctx, func(tx *metastore.Tx) error {
			if err := boundIdle(ctx, tx, m.cfg.TTL); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM cluster_worker_node`).Scan(&id); err != nil {
				return err
			}
			now := m.cfg.Clock()
			_, err := tx.Exec(ctx, `INSERT INTO cluster_worker_node (id, host, port, roles, state, parallelism, started_at_ms, heartbeat_ms, expires_ms)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				id, host, port, strings.Join(m.cfg.Roles, ","), StateRunning, m.cfg.Parallelism,
				toMS(m.started), toMS(now), toMS(now.Add(m.cfg.TTL)))
			return err
		})
		if err == nil {
			m.mu.Lock()
			m.id = id
			m.mu.Unlock()
			m.cfg.Log.Info("registered in the cluster", "node_id", id, "host", host, "port", port, "roles", strings.Join(m.cfg.Roles, ","))
			return nil
		}
		lastErr = err
	}
	return fmt.Errorf("cluster: register node: %w", lastErr)
}

// ID is this node's id (a new one after it re-registered).
func (m *Member) ID() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// Heartbeat renews this node's lease; ErrNodeExpired when the meta leader
// already fenced it.
func (m *Member) Heartbeat(ctx context.Context) error {
	id := m.ID()
	now := m.cfg.Clock()
	var n int64
	err := m.cfg.DB.UnfencedTx(ctx, func(tx *metastore.Tx) error {
		if err := boundIdle(ctx, tx, m.cfg.TTL); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `UPDATE cluster_worker_node SET heartbeat_ms = $1, expires_ms = $2 WHERE id = $3 AND state = $4`,
			toMS(now), toMS(now.Add(m.cfg.TTL)), id, StateRunning)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("cluster: heartbeat of node %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("node %d: %w", id, ErrNodeExpired)
	}
	return nil
}

// KeepAlive heartbeats every third of the lease until ctx ends. A node
// found expired registers again under a new id (its old incarnation stays
// fenced).
func (m *Member) KeepAlive(ctx context.Context) {
	t := time.NewTicker(m.cfg.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := m.Heartbeat(ctx)
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, ErrNodeExpired):
			m.cfg.Log.Warn("registering again", "err", err)
			if err := m.register(ctx); err != nil && ctx.Err() == nil {
				m.cfg.Log.Warn("registering again failed; retrying", "err", err)
			}
		default:
			m.cfg.Log.Warn("heartbeat failed; retrying", "err", err)
		}
	}
}

// Leave marks this node expired at once (a clean shutdown).
func (m *Member) Leave(ctx context.Context) error {
	return m.cfg.DB.UnfencedTx(ctx, func(tx *metastore.Tx) error {
		if err := boundIdle(ctx, tx, m.cfg.TTL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE cluster_worker_node SET state = $1, expires_ms = $2 WHERE id = $3`, StateExpired, toMS(m.cfg.Clock()), m.ID())
		return err
	})
}

// Nodes lists the registered nodes by id.
func Nodes(ctx context.Context, db *metastore.DB) ([]Node, error) {
	rows, err := db.Query(ctx, `SELECT id, host, port, roles, state, parallelism, started_at_ms, heartbeat_ms, expires_ms FROM cluster_worker_node ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("cluster: list nodes: %w", err)
	}
	defer rows.Close()
	var out []Node
	for rows.Next() {
		var n Node
		var roles string
		var started, hb, exp int64
		if err := rows.Scan(&n.ID, &n.Host, &n.Port, &roles, &n.State, &n.Parallelism, &started, &hb, &exp); err != nil {
			return nil, fmt.Errorf("cluster: list nodes: %w", err)
		}
		if roles != "" {
			n.Roles = strings.Split(roles, ",")
		}
		n.StartedAt, n.Heartbeat, n.Expires = fromMS(started), fromMS(hb), fromMS(exp)
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, rows.Err()
}

// ExpireLapsed is the meta leader's sweep: running nodes whose lease
// lapsed before now become expired, and rows expired for longer than
// ExpiredRetention go. It runs in a fenced transaction (Tx), so only the
// leader of the current term can do it. It returns the ids it expired.
func ExpireLapsed(ctx context.Context, db *metastore.DB, now time.Time, ttl time.Duration) ([]int64, error) {
	var ids []int64
	err := db.Tx(ctx, func(tx *metastore.Tx) error {
		ids = ids[:0]
		if err := boundIdle(ctx, tx, ttl); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id FROM cluster_worker_node WHERE state = $1 AND expires_ms < $2 ORDER BY id`, StateRunning, toMS(now))
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.Exec(ctx, `UPDATE cluster_worker_node SET state = $1 WHERE id = $2 AND state = $3`, StateExpired, id, StateRunning); err != nil {
				return err
			}
		}
		// Keep the largest id's row whatever its age, so ids never repeat.
		_, err = tx.Exec(ctx, `DELETE FROM cluster_worker_node WHERE state = $1 AND expires_ms < $2 AND id < (SELECT MAX(id) FROM cluster_worker_node)`,
			StateExpired, toMS(now.Add(-ExpiredRetention)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: expire lapsed nodes: %w", err)
	}
	return ids, nil
}

// ExpireOthers marks every running node but keep expired (a process
// with every role claims the whole cluster: any other node that believed
// itself part of it is fenced). Fenced like ExpireLapsed.
func ExpireOthers(ctx context.Context, db *metastore.DB, keep int64, now time.Time, ttl time.Duration) error {
	return db.Tx(ctx, func(tx *metastore.Tx) error {
		if err := boundIdle(ctx, tx, ttl); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE cluster_worker_node SET state = $1, expires_ms = $2 WHERE state = $3 AND id <> $4`, StateExpired, toMS(now), StateRunning, keep)
		return err
	})
}

// SetAddress changes this node's advertised address (a server that
// learns its port only when it starts listening).
func (m *Member) SetAddress(ctx context.Context, host string, port int) error {
	m.mu.Lock()
	m.cfg.Host, m.cfg.Port = host, port
	m.mu.Unlock()
	return m.cfg.DB.UnfencedTx(ctx, func(tx *metastore.Tx) error {
		if err := boundIdle(ctx, tx, m.cfg.TTL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE cluster_worker_node SET host = $1, port = $2 WHERE id = $3`, host, port, m.ID())
		return err
	})
}

// SweepDuty is the meta leader's duty (Leader.Lead): ExpireLapsed now.
func SweepDuty(db *metastore.DB, ttl time.Duration) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := ExpireLapsed(ctx, db, time.Now(), ttl)
		return err
	}
}
