package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/cluster"
	"github.com/runneldb/runnel/internal/server"
)

// envInt64 returns the environment variable as an integer (0 when unset
// or not a number).
func envInt64(name string) int64 {
	n, _ := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n
}

// envOr returns the environment variable's value, or def.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// flagFromEnv sets a flag from an environment variable when it is set, so
// that a bad value fails like a bad flag (command-line flags, parsed
// afterwards, override it).
func flagFromEnv(fs *flag.FlagSet, name, env string) error {
	v := os.Getenv(env)
	if v == "" {
		return nil
	}
	if err := fs.Set(name, v); err != nil {
		return fmt.Errorf("%s=%q: %w", env, v, err)
	}
	return nil
}

func serveMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", envOr("RUNNEL_LISTEN", "127.0.0.1:4566"), "pgwire listen address (env RUNNEL_LISTEN)")
	dataDir := fs.String("data-dir", envOr("RUNNEL_DATA_DIR", "runnel-data"), "data directory (env RUNNEL_DATA_DIR)")
	objURL := fs.String("object-store", os.Getenv("RUNNEL_OBJECT_STORE"), "object store: local path or s3://bucket/prefix?endpoint=host:port (default DATA_DIR/objects; env RUNNEL_OBJECT_STORE)")
	metaURL := fs.String("meta-store", os.Getenv("RUNNEL_META_STORE"), "metadata store: SQLite path or postgres://… (default DATA_DIR/meta.db; env RUNNEL_META_STORE)")
	interval := fs.Duration("barrier-interval", time.Second, "time between epochs (env RUNNEL_BARRIER_INTERVAL)")
	if err := flagFromEnv(fs, "barrier-interval", "RUNNEL_BARRIER_INTERVAL"); err != nil {
		fmt.Fprintln(stderr, "runnel:", err)
		return 2
	}
	stopTimeout := fs.Duration("actor-stop-timeout", 0, "how long a recovery or DROP waits for aborted actors to exit before it reports them as stuck and abandons them (default 10s; env RUNNEL_ACTOR_STOP_TIMEOUT)")
	if err := flagFromEnv(fs, "actor-stop-timeout", "RUNNEL_ACTOR_STOP_TIMEOUT"); err != nil {
		fmt.Fprintln(stderr, "runnel:", err)
		return 2
	}
	tlsCert := fs.String("tls-cert", os.Getenv("RUNNEL_TLS_CERT"), "TLS certificate file (enables TLS with --tls-key)")
	tlsKey := fs.String("tls-key", os.Getenv("RUNNEL_TLS_KEY"), "TLS key file")
	logFormat := fs.String("log-format", envOr("RUNNEL_LOG_FORMAT", "text"), "log format: text or json")
	logLevel := fs.String("log-level", envOr("RUNNEL_LOG_LEVEL", "info"), "log level: debug, info, warn, error")
	cacheMB := fs.Int64("streaming-cache-mb", envInt64("RUNNEL_STREAMING_CACHE_MB"), "memory budget of the streaming operators' caches in MiB (default 256; env RUNNEL_STREAMING_CACHE_MB)")
	batchMB := fs.Int64("batch-memory-mb", envInt64("RUNNEL_BATCH_MEMORY_MB"), "process-wide cap in MiB on what all running batch queries hold in memory together; a query that would pass it fails with 53200 (default: a quarter of the machine's or cgroup's memory; env RUNNEL_BATCH_MEMORY_MB)")
	httpListen := fs.String("http-listen", envOr("RUNNEL_HTTP_LISTEN", "127.0.0.1:5691"), "HTTP listen address for /metrics, the /api/ JSON APIs, the dashboard and the time-series ingest APIs; empty disables it (env RUNNEL_HTTP_LISTEN)")
	mysqlListen := fs.String("mysql-listen", os.Getenv("RUNNEL_MYSQL_LISTEN"), "MySQL wire-protocol listen address (GreptimeDB uses 127.0.0.1:4002); empty, the default, disables it (env RUNNEL_MYSQL_LISTEN)")
	pprofOn := fs.Bool("pprof", os.Getenv("RUNNEL_PPROF") == "true", "serve /debug/pprof/ on the HTTP listener (env RUNNEL_PPROF=true)")
	role := fs.String("role", envOr("RUNNEL_ROLE", "all"), "roles of this process: all (default), or meta or compactor (alone, for now); comma-separated (env RUNNEL_ROLE)")
	advertise := fs.String("advertise", os.Getenv("RUNNEL_ADVERTISE"), "host:port other nodes and clients reach this node at, recorded in the cluster's node table (default: --listen; env RUNNEL_ADVERTISE)")
	leaseTTL := fs.Duration("lease-ttl", cluster.DefaultLeaseTTL, "meta leadership and node membership lease: a standby takes over a leader silent this long (env RUNNEL_LEASE_TTL)")
	if err := flagFromEnv(fs, "lease-ttl", "RUNNEL_LEASE_TTL"); err != nil {
		fmt.Fprintln(stderr, "runnel:", err)
		return 2
	}
	remoteCompaction := fs.Bool("remote-compaction", os.Getenv("RUNNEL_REMOTE_COMPACTION") == "true", "leave the merges of compactions to compactor nodes (--role compactor) that claim them from the metadata store; this process plans and commits them (env RUNNEL_REMOTE_COMPACTION=true)")
	configFile := fs.String("config", os.Getenv("RUNNEL_CONFIG"), "TOML configuration file (flags and environment variables override it)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *configFile != "" {
		envNames := map[string]string{
			"listen": "RUNNEL_LISTEN", "data-dir": "RUNNEL_DATA_DIR", "object-store": "RUNNEL_OBJECT_STORE",
			"meta-store": "RUNNEL_META_STORE", "tls-cert": "RUNNEL_TLS_CERT", "tls-key": "RUNNEL_TLS_KEY",
			"log-format": "RUNNEL_LOG_FORMAT", "log-level": "RUNNEL_LOG_LEVEL",
			"streaming-cache-mb": "RUNNEL_STREAMING_CACHE_MB", "barrier-interval": "RUNNEL_BARRIER_INTERVAL",
			"batch-memory-mb": "RUNNEL_BATCH_MEMORY_MB",
			"http-listen":     "RUNNEL_HTTP_LISTEN", "pprof": "RUNNEL_PPROF", "mysql-listen": "RUNNEL_MYSQL_LISTEN",
			"actor-stop-timeout": "RUNNEL_ACTOR_STOP_TIMEOUT",
			"role":               "RUNNEL_ROLE", "advertise": "RUNNEL_ADVERTISE", "lease-ttl": "RUNNEL_LEASE_TTL",
			"remote-compaction": "RUNNEL_REMOTE_COMPACTION",
		}
		if err := applyConfigFile(fs, *configFile, envNames); err != nil {
			fmt.Fprintln(stderr, "runnel:", err)
			return 2
		}
	}
	if *batchMB > 0 {
		batch.SetProcessMemoryLimit(*batchMB << 20)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "runnel: bad --log-level %q\n", *logLevel)
		return 2
	}
	var handler slog.Handler
	if *logFormat == "json" {
		handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
	} else {
		handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	log := slog.New(handler)
	roles, err := cluster.ParseRoles(*role)
	if err == nil {
		err = runnableAlone(roles)
	}
	if err != nil {
		fmt.Fprintf(stderr, "runnel: --role %s: %v\n", *role, err)
		return 2
	}
	if *leaseTTL <= 0 {
		fmt.Fprintf(stderr, "runnel: --lease-ttl %v: must be positive\n", *leaseTTL)
		return 2
	}

	ctx := context.Background()
	cfg := server.Config{
		Listen:           *listen,
		DataDir:          *dataDir,
		ObjectStoreURL:   *objURL,
		MetaStoreURL:     *metaURL,
		BarrierInterval:  *interval,
		ActorStopTimeout: *stopTimeout,
		TLSCertFile:      *tlsCert,
		TLSKeyFile:       *tlsKey,
		HTTPListen:       *httpListen,
		MySQLListen:      *mysqlListen,
		Pprof:            *pprofOn,
		Advertise:        *advertise,
		LeaseTTL:         *leaseTTL,
		RemoteCompaction: *remoteCompaction,
		Logger:           log,

		StreamingCacheBytes: *cacheMB << 20,
	}
	if len(roles) == 1 && roles[0] == cluster.RoleCompactor {
		return serveCompactorNode(ctx, cfg, log)
	}
	if !cluster.IsAll(roles) {
		return serveMetaNode(ctx, cfg, log)
	}
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case err := <-errc:
		if err != nil {
			log.Error("server stopped", "err", err)
			srv.Close()
			return 1
		}
	}
	if err := srv.Close(); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

// runnableAlone refuses the role sets that this build cannot run: every
// role together (all) runs, and the meta role or the compactor role
// alone; the other roles need the RPC between roles, which is not built
// yet (issue 16).
func runnableAlone(roles []string) error {
	if cluster.IsAll(roles) || (len(roles) == 1 && (roles[0] == cluster.RoleMeta || roles[0] == cluster.RoleCompactor)) {
		return nil
	}
	for _, r := range roles {
		switch r {
		case cluster.RoleCompute:
			return fmt.Errorf("the compute role cannot run apart from the others yet: it needs the meta-to-compute RPC (building actors, injecting and collecting barriers) and the exchange between compute nodes, which are not built; run --role all, or --role meta for a standby meta node")
		case cluster.RoleFrontend:
			return fmt.Errorf("the frontend role cannot run apart from the others yet: it needs the frontend-to-meta RPC (DDL, catalog) and DML routing to compute nodes, which are not built; run --role all, or --role meta for a standby meta node")
		}
	}
	return fmt.Errorf("this combination of roles cannot run apart from the others yet; run --role all, or --role meta or --role compactor alone")
}

// serveCompactorNode runs a process with the compactor role alone until
// SIGINT or SIGTERM (server.CompactorNode: claims compaction tasks from
// the metadata store; the meta leader commits their results).
func serveCompactorNode(ctx context.Context, cfg server.Config, log *slog.Logger) int {
	node, err := server.OpenCompactorNode(ctx, cfg)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := node.Run(ctx); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

// serveMetaNode runs a process with the meta role alone until SIGINT or
// SIGTERM (server.MetaNode: membership, leadership, fencing).
func serveMetaNode(ctx context.Context, cfg server.Config, log *slog.Logger) int {
	node, err := server.OpenMetaNode(ctx, cfg)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := node.Run(ctx); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}
