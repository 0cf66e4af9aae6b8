package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/cluster"
	"github.com/runneldb/runnel/internal/compute"
	"github.com/runneldb/runnel/internal/frontend"
	"github.com/runneldb/runnel/internal/httpapi"
	"github.com/runneldb/runnel/internal/meta"
	"github.com/runneldb/runnel/internal/metasrv"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/mysqlwire"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
	"github.com/runneldb/runnel/internal/stream/exec"
)

// Config configures one single-process Runnel server.
type Config struct {
	// Listen is the pgwire address (default 127.0.0.1:4566).
	Listen string
	// DataDir holds the embedded defaults: objects/ and meta.db.
	DataDir string
	// ObjectStoreURL overrides the object store: a local path or
	// s3://bucket/prefix?endpoint=… (default DataDir/objects).
	ObjectStoreURL string
	// MetaStoreURL overrides the metadata store: a SQLite path or
	// postgres://… (default DataDir/meta.db).
	MetaStoreURL string
	// BarrierInterval is the time between epochs (default 1 s).
	BarrierInterval time.Duration
	// ActorStopTimeout bounds how long a recovery, a database's reset or a
	// DROP waits for aborted actors to exit before it reports them as
	// stuck (which actor, doing what) and abandons them, fencing their
	// epochs (I3, I7). Default stream.DefaultStopTimeout (10 s).
	ActorStopTimeout time.Duration
	// TLSCertFile and TLSKeyFile enable TLS when both are set.
	TLSCertFile, TLSKeyFile string
	// BlockCacheBytes and WriteBufferBytes bound the storage engine's
	// memory (defaults 256 MiB and 256 MiB).
	BlockCacheBytes, WriteBufferBytes int64
	// Parallelism is the number of actors per hash-distributed fragment of
	// a materialized view (default: the number of cores).
	Parallelism int
	// StreamingCacheBytes bounds the streaming operators' caches (join
	// rows, aggregation groups) of the whole process together; past it
	// they evict to the state store (default exec.DefaultCacheBytes,
	// 256 MiB).
	StreamingCacheBytes int64
	// ObjectStoreWait is how long Open keeps trying to write, read and
	// delete a probe object before it gives up on an unusable object store
	// (default 30 s).
	ObjectStoreWait time.Duration
	// HTTPListen is the address of the HTTP listener serving /metrics,
	// the /api/ JSON APIs and the dashboard (observe_api.go; "" disables
	// it; the runnel command's default is 127.0.0.1:5691).
	HTTPListen string
	// MySQLListen is the address of the MySQL wire-protocol listener
	// (package mysqlwire; "" disables it, the default).
	MySQLListen string
	// Pprof serves /debug/pprof/ on the HTTP listener.
	Pprof bool
	// Advertise is the host:port other nodes and clients reach this node
	// at, recorded in the cluster's node table (default: the pgwire
	// listener's address).
	Advertise string
	// LeaseTTL is the meta leadership lease and the membership lease
	// (default cluster.DefaultLeaseTTL); a compactor node's claims on
	// compaction tasks last as long.
	LeaseTTL time.Duration
	// RemoteCompaction leaves the merges of compactions to compactor
	// nodes (`--role compactor`) that claim them from the metadata
	// store; this process plans and commits them (storage.Options).
	RemoteCompaction bool
	Logger           *slog.Logger
}

func (c *Config) fill() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:4566"
	}
	if c.DataDir == "" {
		c.DataDir = "runnel-data"
	}
	if c.ObjectStoreURL == "" {
		c.ObjectStoreURL = filepath.Join(c.DataDir, "objects")
	}
	if c.MetaStoreURL == "" {
		c.MetaStoreURL = filepath.Join(c.DataDir, "meta.db")
	}
	if c.BarrierInterval <= 0 {
		c.BarrierInterval = time.Second
	}
	if c.BlockCacheBytes <= 0 {
		c.BlockCacheBytes = 256 << 20
	}
	if c.WriteBufferBytes <= 0 {
		c.WriteBufferBytes = 256 << 20
	}
	if c.ObjectStoreWait <= 0 {
		c.ObjectStoreWait = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = cluster.DefaultLeaseTTL
	}
}

// Server is a running single-process Runnel.
type Server struct {
	cfg     Config
	log     *slog.Logger
	metaDB  *metastore.DB
	objects objstore.Store
	store   *storage.Engine
	catalog *catalog.Catalog
	epochs  *meta.BarrierLoop
	pg      *pgwire.Server
	// The roles (see roles.go): meta's DDL and job lifecycle, the compute
	// node running the actors, the frontend serving the SQL sessions.
	meta    *metasrv.Service
	compute *compute.Node
	actors  *stream.BarrierManager // the compute node's
	fe      *frontend.Frontend

	ln net.Listener

	// The HTTP listener (observe_api.go).
	http     *httpapi.Server
	httpAPI  *observer
	httpAddr string

	// The MySQL listener (mysql.go).
	mysql     *mysqlwire.Server
	mysqlAddr string

	// This node in the cluster tables and its meta leadership (cluster.go).
	cluster     *clusterNode
	steppedDown atomic.Bool
}

// Open opens (or creates) the data directory, loads the catalog and starts
// every job's actors and the barrier loop. It does not listen yet; see
// Serve.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	cfg.fill()
	s := &Server{cfg: cfg, log: cfg.Logger}
	if err := ensureDataDir(cfg); err != nil {
		return nil, err
	}
	var err error
	if s.metaDB, err = metastore.Open(ctx, cfg.MetaStoreURL); err != nil {
		return nil, err
	}
	// Leadership first: every commit below, the storage engine's first
	// included, is fenced by this process's term (cluster.go).
	if err := s.joinCluster(ctx); err != nil {
		s.close()
		return nil, err
	}
	if s.objects, err = objstore.Open(ctx, cfg.ObjectStoreURL); err != nil {
		s.close()
		return nil, err
	}
	// A misconfigured or unreachable object store is reported now, not at
	// the first checkpoint that uploads an SST (small epochs are inlined in
	// the metastore and would hide it until then).
	if err := objstore.ProbeUntil(ctx, s.objects, cfg.ObjectStoreWait, func(err error, next time.Duration) {
		s.log.Warn("object store not usable yet; retrying", "object_store", cfg.ObjectStoreURL, "err", err, "retry_in", next)
	}); err != nil {
		s.close()
		return nil, fmt.Errorf("object store %s is not usable: %w", cfg.ObjectStoreURL, err)
	}
	s.store, err = storage.Open(ctx, storage.Options{
		Store:            s.objects,
		Meta:             s.metaDB,
		BlockCacheBytes:  cfg.BlockCacheBytes,
		WriteBufferBytes: cfg.WriteBufferBytes,
		RemoteCompaction: cfg.RemoteCompaction,
		Logger:           s.log,
	})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("open storage: %w", err)
	}
	if s.catalog, err = catalog.Open(ctx, s.metaDB); err != nil {
		s.close()
		return nil, err
	}
	s.meta = metasrv.New(metasrv.Config{Log: s.log, Catalog: s.catalog, Store: s.store})
	if err := s.meta.LoadSystemParams(ctx); err != nil {
		s.close()
		return nil, err
	}
	if err := s.meta.ReconcileState(ctx); err != nil { // metasrv/statecatalog.go
		s.close()
		return nil, err
	}
	s.store.SetTableGroup(s.meta.TableGroup)
	exec.SetExprErrorLogger(s.log)
	exec.SetCacheBytes(cfg.StreamingCacheBytes)
	s.compute = compute.New(compute.Config{Store: s.store, Log: s.log, Parallelism: cfg.Parallelism,
		TxHorizon: func() uint64 { return s.fe.TxHorizon() }, Dropping: s.meta.IsDropping})
	s.actors = s.compute.Barriers()
	s.actors.StopTimeout = cfg.ActorStopTimeout
	s.fe = frontend.New(frontend.Config{Meta: metaRole{s}, DML: s.compute, Store: s.store, Log: s.log})
	s.epochs = meta.NewBarrierLoop(s.log, cfg.BarrierInterval, s.actors, s.store)
	s.epochs.SetRebuilder(s.meta)
	s.meta.Attach(s.epochs, s.compute, s.fe)
	if err := s.epochs.WithGraphLock(func(curr uint64) error { return s.meta.Rebuild(ctx, curr) }); err != nil {
		s.close()
		return nil, err
	}
	s.epochs.Start()

	pcfg := pgwire.DefaultConfig()
	pcfg.Logger = s.log
	if cfg.TLSCertFile != "" && cfg.TLSKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("load TLS certificate: %w", err)
		}
		pcfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	s.pg = pgwire.NewServer(pcfg, s.fe.Engine())
	if err := s.startHTTP(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.startMySQL(); err != nil {
		s.Close()
		return nil, err
	}
	s.startClusterLoops()
	return s, nil
}

// ensureDataDir creates the data directory.
func ensureDataDir(cfg Config) error {
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("create data directory %s: %w", cfg.DataDir, err)
	}
	return nil
}

// ListenAndServe listens on cfg.Listen and serves until Close.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ln)
}

// Serve serves pgwire connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	s.ln = ln
	s.advertiseListener(ln)
	s.log.Info("runnel is ready", "listen", ln.Addr().String(), "data_dir", s.cfg.DataDir)
	err := s.pg.Serve(ln)
	if s.steppedDown.Load() {
		return ErrSteppedDown
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Close shuts down: sessions first, then the barrier loop (an epoch in
// progress is committed or abandoned whole), then the actors and storage.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.http != nil {
		s.http.Close()
	}
	if s.mysql != nil {
		s.mysql.Shutdown(ctx)
	}
	if s.pg != nil {
		s.pg.Shutdown(ctx)
	}
	if s.epochs != nil {
		s.epochs.Stop()
	}
	if s.actors != nil {
		s.actors.Reset(ctx)
	}
	if s.meta != nil {
		s.meta.Close()
	}
	return s.close()
}

func (s *Server) close() error {
	s.leaveCluster()
	var errs []error
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	if s.metaDB != nil {
		errs = append(errs, s.metaDB.Close())
	}
	return errors.Join(errs...)
}
