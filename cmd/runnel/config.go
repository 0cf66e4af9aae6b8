package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/BurntSushi/toml"
)

// fileConfig is the optional configuration file (`runnel serve --config
// runnel.toml`). Precedence, lowest first: built-in defaults, the file,
// environment variables, flags given on the command line.
//
//	listen = "127.0.0.1:4566"
//	data_dir = "runnel-data"
//	object_store = "s3://bucket/prefix?endpoint=127.0.0.1:9000"
//	meta_store = "postgres://runnel@db:5432/runnel_meta"
//	barrier_interval = "1s"
//	actor_stop_timeout = "10s"
//	tls_cert = "server.crt"
//	tls_key = "server.key"
//	log_format = "json"
//	log_level = "info"
//	streaming_cache_mb = 256
//	http_listen = "127.0.0.1:5691"
//	mysql_listen = "127.0.0.1:4002"
//	pprof = true
//	role = "all"
//	advertise = "10.0.0.5:4566"
//	lease_ttl = "10s"
//	remote_compaction = true
type fileConfig struct {
	Listen          string `toml:"listen"`
	DataDir         string `toml:"data_dir"`
	ObjectStore     string `toml:"object_store"`
	MetaStore       string `toml:"meta_store"`
	BarrierInterval string `toml:"barrier_interval"`
	// ActorStopTimeout bounds the wait for aborted actors (--actor-stop-timeout).
	ActorStopTimeout string `toml:"actor_stop_timeout"`
	TLSCert          string `toml:"tls_cert"`
	TLSKey           string `toml:"tls_key"`
	LogFormat        string `toml:"log_format"`
	LogLevel         string `toml:"log_level"`
	// StreamingCacheMB is the streaming operator cache budget in MiB.
	StreamingCacheMB int64 `toml:"streaming_cache_mb"`
	// BatchMemoryMB is the process-wide batch query memory cap in MiB.
	BatchMemoryMB int64 `toml:"batch_memory_mb"`
	// HTTPListen is the HTTP listener's address (metrics, dashboard).
	HTTPListen string `toml:"http_listen"`
	// MySQLListen is the MySQL wire-protocol listener's address.
	MySQLListen string `toml:"mysql_listen"`
	// Pprof serves /debug/pprof/ on the HTTP listener.
	Pprof bool `toml:"pprof"`
	// Role is the process's roles (all, meta, …; comma-separated).
	Role string `toml:"role"`
	// Advertise is the host:port recorded in the cluster's node table.
	Advertise string `toml:"advertise"`
	// LeaseTTL is the meta leadership and membership lease.
	LeaseTTL string `toml:"lease_ttl"`
	// RemoteCompaction leaves compactions' merges to compactor nodes.
	RemoteCompaction bool `toml:"remote_compaction"`
}

// applyConfigFile sets every flag that the command line and the
// environment left alone from the file at path.
func applyConfigFile(fs *flag.FlagSet, path string, envNames map[string]string) error {
	var fc fileConfig
	md, err := toml.DecodeFile(path, &fc)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if undec := md.Undecoded(); len(undec) > 0 {
		return fmt.Errorf("config file %s: unknown setting %q", path, undec[0].String())
	}
	for key, v := range map[string]string{"barrier_interval": fc.BarrierInterval, "actor_stop_timeout": fc.ActorStopTimeout, "lease_ttl": fc.LeaseTTL} {
		if v == "" {
			continue
		}
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("config file %s: %s: %w", path, key, err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	values := map[string]string{
		"listen": fc.Listen, "data-dir": fc.DataDir, "object-store": fc.ObjectStore, "meta-store": fc.MetaStore,
		"barrier-interval": fc.BarrierInterval, "tls-cert": fc.TLSCert, "tls-key": fc.TLSKey,
		"log-format": fc.LogFormat, "log-level": fc.LogLevel, "http-listen": fc.HTTPListen,
		"actor-stop-timeout": fc.ActorStopTimeout,
		"mysql-listen":       fc.MySQLListen,
		"role":               fc.Role, "advertise": fc.Advertise, "lease-ttl": fc.LeaseTTL,
	}
	if fc.Pprof {
		values["pprof"] = "true"
	}
	if fc.RemoteCompaction {
		values["remote-compaction"] = "true"
	}
	if fc.BatchMemoryMB != 0 {
		values["batch-memory-mb"] = strconv.FormatInt(fc.BatchMemoryMB, 10)
	}
	if fc.StreamingCacheMB != 0 {
		values["streaming-cache-mb"] = strconv.FormatInt(fc.StreamingCacheMB, 10)
	}
	for name, v := range values {
		if v == "" || set[name] {
			continue
		}
		if env := envNames[name]; env != "" && os.Getenv(env) != "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("config file %s: %s: %w", path, name, err)
		}
	}
	return nil
}
