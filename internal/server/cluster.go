package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/cluster"
)

// ErrSteppedDown is returned by Serve when this process lost the meta
// leadership to another node and stopped serving.
var ErrSteppedDown = errors.New("this process lost the meta leadership to another node and stepped down")

// clusterNode is this process's place in the cluster tables
// (internal/cluster): its membership row and, with the meta role, its
// side of the leadership.
type clusterNode struct {
	member *cluster.Member
	leader *cluster.Leader
	ttl    time.Duration
	// advertised: the address was given (--advertise), not taken from
	// the listener.
	advertised bool
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

// splitHostPort reads host:port (the port may be missing: 0).
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("address %q: bad port %q", addr, p)
	}
	return host, port, nil
}

// joinCluster registers this process (every role) and takes the meta
// leadership by force: a process with every role claims the whole
// cluster, so any earlier process on the same metadata store — crashed,
// or paused and still believing it leads — is fenced, and the other
// nodes registered as running are marked expired. It installs the term
// check as the store's fence before the storage engine opens, so that
// every catalog and version commit of this process, the first included,
// is fenced (I1/I2: one writer).
func (s *Server) joinCluster(ctx context.Context) error {
	cfg := s.cfg
	addr := cfg.Advertise
	if addr == "" {
		addr = cfg.Listen
	}
	host, port, err := splitHostPort(addr)
	if err != nil {
		return fmt.Errorf("advertise: %w", err)
	}
	if err := cluster.Migrate(ctx, s.metaDB); err != nil {
		return err
	}
	par := cfg.Parallelism
	if par <= 0 {
		par = runtime.NumCPU()
	}
	c := &clusterNode{ttl: cfg.LeaseTTL, advertised: cfg.Advertise != ""}
	if c.member, err = cluster.Register(ctx, cluster.MemberConfig{DB: s.metaDB, Host: host, Port: port,
		Roles: cluster.AllRoles(), Parallelism: par, TTL: c.ttl, Log: s.log}); err != nil {
		return err
	}
	c.leader = cluster.NewLeader(cluster.LeaderConfig{DB: s.metaDB, TTL: c.ttl, Log: s.log,
		Holder: fmt.Sprintf("node %d", c.member.ID())})
	if _, _, err := c.leader.TryAcquire(ctx, true); err != nil {
		return fmt.Errorf("take the meta leadership: %w", err)
	}
	if err := c.leader.Prepare(ctx); err != nil {
		return err
	}
	s.metaDB.SetFence(c.leader.Fence)
	if err := cluster.ExpireOthers(ctx, s.metaDB, c.member.ID(), time.Now(), c.ttl); err != nil {
		return err
	}
	s.cluster = c
	return nil
}

// startClusterLoops starts the lease renewals, the membership heartbeat,
// the meta leader's sweep of lapsed nodes, and the step-down: when the
// leadership is lost (a renewal or a commit refused because another node
// took over) this process stops serving — it does not crash, and it
// commits nothing more.
func (s *Server) startClusterLoops() {
	c := s.cluster
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	lost := c.leader.Lost()
	c.wg.Add(3)
	go func() { defer c.wg.Done(); c.member.KeepAlive(ctx) }()
	go func() { defer c.wg.Done(); c.leader.Lead(ctx, cluster.SweepDuty(s.metaDB, c.ttl)) }()
	go func() {
		defer c.wg.Done()
		select {
		case <-ctx.Done():
		case <-lost:
			s.stepDown()
		}
	}()
}

// stepDown stops serving after the leadership was lost.
func (s *Server) stepDown() {
	s.log.Error("this process lost the meta leadership to another node: stepping down (it stops serving and commits nothing more)")
	s.steppedDown.Store(true)
	s.epochs.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.pg.Shutdown(ctx)
}

// advertiseListener records the listener's address as this node's when
// none was given.
func (s *Server) advertiseListener(ln net.Listener) {
	if s.cluster == nil || s.cluster.advertised {
		return
	}
	host, port, err := splitHostPort(ln.Addr().String())
	if err != nil {
		return
	}
	if err := s.cluster.member.SetAddress(context.Background(), host, port); err != nil {
		s.log.Warn("cannot record the listener's address in the cluster table", "err", err)
	}
}

// leaveCluster stops the loops and marks this node expired (a clean
// shutdown leaves no running node behind).
func (s *Server) leaveCluster() {
	c := s.cluster
	if c == nil {
		return
	}
	if c.cancel != nil {
		c.cancel()
		c.wg.Wait()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.member.Leave(ctx); err != nil {
		s.log.Warn("cannot mark this node as left in the cluster table", "err", err)
	}
}

// WorkerNodes lists the cluster's nodes (rw_worker_nodes, SHOW CLUSTER).
func (s *Server) WorkerNodes(ctx context.Context) ([]cluster.Node, error) {
	return cluster.Nodes(ctx, s.metaDB)
}

// MetaLeader is the meta leadership as the store has it.
func (s *Server) MetaLeader(ctx context.Context) (cluster.LeaseInfo, error) {
	return cluster.Info(ctx, s.metaDB)
}
