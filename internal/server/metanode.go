package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/runneldb/runnel/internal/cluster"
	"github.com/runneldb/runnel/internal/metastore"
)

// MetaNode is a process with the meta role alone (`runnel serve --role
// meta`). What it does today is the coordination the cluster rests on:
// it registers itself in the node table and heartbeats, contends for the
// meta leadership as a standby, and while it leads it fences its commits
// with its term and runs the leader's duty (marking nodes whose lease
// lapsed as expired). When it loses the leadership — its first fenced
// commit after a pause is refused — it steps down to standby and
// contends again; it never crashes.
//
// It does not yet run DDL, the barrier loop or recovery for other nodes:
// those need the RPC between roles (issue 16), which is not built.
type MetaNode struct {
	log    *slog.Logger
	db     *metastore.DB
	member *cluster.Member
	leader *cluster.Leader
	ttl    time.Duration
}

// OpenMetaNode opens the metadata store (cfg.MetaStoreURL, default
// DataDir/meta.db) and registers this node with the meta role at
// cfg.Advertise (default cfg.Listen).
func OpenMetaNode(ctx context.Context, cfg Config) (*MetaNode, error) {
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
	if err := cluster.Migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	member, err := cluster.Register(ctx, cluster.MemberConfig{DB: db, Host: host, Port: port,
		Roles: []string{cluster.RoleMeta}, TTL: cfg.LeaseTTL, Log: cfg.Logger})
	if err != nil {
		db.Close()
		return nil, err
	}
	leader := cluster.NewLeader(cluster.LeaderConfig{DB: db, TTL: cfg.LeaseTTL, Log: cfg.Logger,
		Holder: fmt.Sprintf("node %d", member.ID())})
	// Every commit of this node is fenced by its term (I1/I2); the
	// lease and membership bookkeeping runs unfenced.
	db.SetFence(leader.Fence)
	return &MetaNode{log: cfg.Logger, db: db, member: member, leader: leader, ttl: cfg.LeaseTTL}, nil
}

// NodeID is this node's id in the node table.
func (n *MetaNode) NodeID() int64 { return n.member.ID() }

// Run contends, leads and steps down (cluster.Leader.Serve) and
// heartbeats until ctx ends, then marks this node expired and closes the
// store.
func (n *MetaNode) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() { defer close(done); n.member.KeepAlive(ctx) }()
	n.log.Info("meta node started", "node_id", n.member.ID())
	n.leader.Serve(ctx, cluster.SweepDuty(n.db, n.ttl), nil)
	<-done
	lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.member.Leave(lctx); err != nil {
		n.log.Warn("cannot mark this node as left in the cluster table", "err", err)
	}
	return n.db.Close()
}
