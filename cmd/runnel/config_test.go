package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The file fills what the command line did not set; the command line wins.
func TestConfigFilePrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runnel.toml")
	if err := os.WriteFile(path, []byte("listen = \"127.0.0.1:9999\"\ndata_dir = \"/from/file\"\nbarrier_interval = \"250ms\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:4566", "")
	dataDir := fs.String("data-dir", "runnel-data", "")
	interval := fs.Duration("barrier-interval", 0, "")
	if err := fs.Parse([]string{"--data-dir", "/from/flag"}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fs, path, nil); err != nil {
		t.Fatal(err)
	}
	if *listen != "127.0.0.1:9999" || *dataDir != "/from/flag" || interval.String() != "250ms" {
		t.Fatalf("listen=%s data-dir=%s interval=%s", *listen, *dataDir, interval)
	}
}

func TestConfigFileRejectsUnknownSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runnel.toml")
	if err := os.WriteFile(path, []byte("lissten = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("listen", "", "")
	err := applyConfigFile(fs, path, nil)
	if err == nil || !strings.Contains(err.Error(), "lissten") {
		t.Fatalf("err = %v; want an error naming the unknown setting", err)
	}
}

// --barrier-interval has an environment variable like every other flag:
// RUNNEL_BARRIER_INTERVAL sets it, a command-line flag overrides it, it
// overrides the configuration file, and a bad value fails serve (exit 2).
func TestBarrierIntervalEnvironment(t *testing.T) {
	t.Setenv("RUNNEL_BARRIER_INTERVAL", "250ms")
	parse := func(args ...string) time.Duration {
		t.Helper()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		interval := fs.Duration("barrier-interval", time.Second, "")
		if err := flagFromEnv(fs, "barrier-interval", "RUNNEL_BARRIER_INTERVAL"); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "runnel.toml")
		if err := os.WriteFile(path, []byte("barrier_interval = \"5s\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := applyConfigFile(fs, path, map[string]string{"barrier-interval": "RUNNEL_BARRIER_INTERVAL"}); err != nil {
			t.Fatal(err)
		}
		return *interval
	}
	if got := parse(); got != 250*time.Millisecond {
		t.Fatalf("with RUNNEL_BARRIER_INTERVAL=250ms and a file saying 5s: %v", got)
	}
	if got := parse("--barrier-interval", "2s"); got != 2*time.Second {
		t.Fatalf("with the flag 2s: %v", got)
	}
	t.Setenv("RUNNEL_BARRIER_INTERVAL", "soon")
	var stderr strings.Builder
	if code := serveMain(nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "RUNNEL_BARRIER_INTERVAL") {
		t.Fatalf("serve with RUNNEL_BARRIER_INTERVAL=soon: exit %d, %q; want 2 naming the variable", code, stderr.String())
	}
}

// http_listen in the file sets --http-listen (the metrics and dashboard
// listener) when neither the flag nor RUNNEL_HTTP_LISTEN does.
func TestConfigFileHTTPListen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runnel.toml")
	if err := os.WriteFile(path, []byte("http_listen = \"127.0.0.1:7777\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	httpListen := fs.String("http-listen", "127.0.0.1:5691", "")
	if err := applyConfigFile(fs, path, map[string]string{"http-listen": "RUNNEL_HTTP_LISTEN"}); err != nil {
		t.Fatal(err)
	}
	if *httpListen != "127.0.0.1:7777" {
		t.Fatalf("http-listen = %s; want the file's 127.0.0.1:7777", *httpListen)
	}
}

// --actor-stop-timeout (issue 13: the bound on recovery's wait for aborted
// actors) is set like every other flag: RUNNEL_ACTOR_STOP_TIMEOUT, the
// file's actor_stop_timeout, and a bad value in either fails serve with
// exit 2 naming it.
func TestActorStopTimeoutSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runnel.toml")
	if err := os.WriteFile(path, []byte("actor_stop_timeout = \"3s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	stop := fs.Duration("actor-stop-timeout", 0, "")
	if err := applyConfigFile(fs, path, map[string]string{"actor-stop-timeout": "RUNNEL_ACTOR_STOP_TIMEOUT"}); err != nil {
		t.Fatal(err)
	}
	if *stop != 3*time.Second {
		t.Fatalf("actor-stop-timeout = %v; want the file's 3s", *stop)
	}

	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("actor_stop_timeout = \"soon\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if code := serveMain([]string{"--config", bad}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "actor_stop_timeout") {
		t.Fatalf("serve with actor_stop_timeout = soon: exit %d, %q; want 2 naming the setting", code, stderr.String())
	}
	t.Setenv("RUNNEL_ACTOR_STOP_TIMEOUT", "soon")
	stderr.Reset()
	if code := serveMain(nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "RUNNEL_ACTOR_STOP_TIMEOUT") || strings.Contains(stderr.String(), "no such flag") {
		t.Fatalf("serve with RUNNEL_ACTOR_STOP_TIMEOUT=soon: exit %d, %q; want 2 naming the variable", code, stderr.String())
	}
}

// mysql_listen in the file sets --mysql-listen (the MySQL wire-protocol
// listener) when neither the flag nor RUNNEL_MYSQL_LISTEN does.
func TestConfigFileMySQLListen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runnel.toml")
	if err := os.WriteFile(path, []byte("mysql_listen = \"127.0.0.1:7777\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	mysqlListen := fs.String("mysql-listen", "", "")
	if err := applyConfigFile(fs, path, map[string]string{"mysql-listen": "RUNNEL_MYSQL_LISTEN"}); err != nil {
		t.Fatal(err)
	}
	if *mysqlListen != "127.0.0.1:7777" {
		t.Fatalf("mysql-listen = %s; want the file's 127.0.0.1:7777", *mysqlListen)
	}
}
