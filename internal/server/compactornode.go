package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/runneldb/runnel/internal/cluster"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
)

// CompactorPauseEnv names a compaction pause point (storage.HookPoint,
// e.g. after-outputs-before-commit) at which a compactor node stops and
// waits until it is stopped: multi-process tests SIGKILL it there, at the
// dangerous point, instead of guessing with sleeps.
const CompactorPauseEnv = "RUNNEL_TEST_COMPACTOR_PAUSE"

// CompactorNode is a process with the compactor role alone (`runnel
// serve --role compactor`): it registers in the node table, heartbeats,
// and claims the compaction tasks the meta leader planned in the metadata
// store (storage.Compactor): it reads the inputs from the object store,
// writes the outputs there under the ids the job record reserved, and
// hands the result back; the meta leader commits it. It never writes the
// storage version or the catalog (I1/I2: one writer).
type CompactorNode struct {
	log       *slog.Logger
	db        *metastore.DB
	member    *cluster.Member
	compactor *storage.Compactor
	stopped   chan struct{} // closed when Run's context ends (releases a test pause)
}

// OpenCompactorNode opens the cluster's stores (cfg.MetaStoreURL and
// cfg.ObjectStoreURL, the same every node is given) and registers this
// node with the compactor role at cfg.Advertise (default cfg.Listen).
func OpenCompactorNode(ctx context.Context, cfg Config) (*CompactorNode, error) {
	cfg.fill()
	addr := cfg.Advertise
	if addr == "" {
		addr = cfg.Listen
	}
	host, port, err := splitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("advertise: %w", err)
	}
	if err := ensureDataDir(cfg); err != nil {
		return nil, err
	}
	db, err := metastore.Open(ctx, cfg.MetaStoreURL)
	if err != nil {
		return nil, err
	}
	n := &CompactorNode{log: cfg.Logger, db: db, stopped: make(chan struct{})}
	fail := func(err error) (*CompactorNode, error) {
		db.Close()
		return nil, err
	}
	objects, err := objstore.Open(ctx, cfg.ObjectStoreURL)
	if err != nil {
		return fail(err)
	}
	if err := cluster.Migrate(ctx, db); err != nil {
		return fail(err)
	}
	if n.member, err = cluster.Register(ctx, cluster.MemberConfig{DB: db, Host: host, Port: port,
		Roles: []string{cluster.RoleCompactor}, Parallelism: 1, TTL: cfg.LeaseTTL, Log: cfg.Logger}); err != nil {
		return fail(err)
	}
	var hooks *storage.Hooks
	if at := os.Getenv(CompactorPauseEnv); at != "" {
		hooks = &storage.Hooks{Compaction: func(p storage.HookPoint, j *storage.CompactionJob) error {
			if string(p) == at {
				n.log.Warn("compactor paused at a test point", "point", string(p), "job", j.ID)
				<-n.stopped
			}
			return nil
		}}
	}
	if n.compactor, err = storage.NewCompactor(ctx, storage.CompactorOptions{Store: objects, Meta: db,
		Node: fmt.Sprintf("node %d", n.member.ID()), Lease: cfg.LeaseTTL, BlockCacheBytes: cfg.BlockCacheBytes,
		Hooks: hooks, Logger: cfg.Logger}); err != nil {
		return fail(err)
	}
	return n, nil
}

// NodeID is this node's id in the node table.
func (n *CompactorNode) NodeID() int64 { return n.member.ID() }

// Run claims and runs compaction tasks and heartbeats until ctx ends,
// then marks this node expired and closes the stores. A task in progress
// when ctx ends stops and is reported failed, and the meta leader aborts
// it at once (its outputs go to the deletion queue, I1); a node killed
// mid-task reports nothing, and the leader aborts the task when its
// claim's lease lapses.
func (n *CompactorNode) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() { defer close(done); n.member.KeepAlive(ctx) }()
	go func() { <-ctx.Done(); close(n.stopped) }()
	n.log.Info("compactor node started", "node_id", n.member.ID())
	n.compactor.Run(ctx)
	<-done
	n.compactor.Close()
	lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.member.Leave(lctx); err != nil {
		n.log.Warn("cannot mark this node as left in the cluster table", "err", err)
	}
	return n.db.Close()
}
