package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestRoleRefusals: --role is validated before anything starts, from the
// flag, RUNNEL_ROLE and the configuration file alike; roles that cannot
// run apart yet (compute, frontend, and any combination but all) are
// refused (exit 2) with a message saying what is not built, never
// started as a pretend node. meta and compactor run alone
// (TestMetaNodesFailover, TestCompactorNode).
func TestRoleRefusals(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "runnel.toml")
	if err := os.WriteFile(cfg, []byte("role = \"frontend,compactor\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{args: []string{"--role", "compute"}, want: "compute role cannot run apart from the others yet: it needs the meta-to-compute RPC"},
		{args: []string{"--role", "frontend"}, want: "frontend role cannot run apart from the others yet: it needs the frontend-to-meta RPC"},
		{args: []string{"--role", "meta,frontend"}, want: "frontend role cannot run apart"},
		{args: []string{"--config", cfg}, want: "frontend role cannot run apart from the others yet"},
		{args: []string{"--role", "meta,compactor"}, want: "this combination of roles cannot run apart from the others yet; run --role all, or --role meta or --role compactor alone"},
		{env: "compute", want: "--role compute: the compute role cannot run apart"},
		{args: []string{"--role", "metta"}, want: `unknown role "metta" (roles: all, meta, compute, frontend, compactor, comma-separated)`},
		{args: []string{"--role", "meta,"}, want: "has an empty entry"},
		{args: []string{"--role", "meta", "--lease-ttl", "0s"}, want: "--lease-ttl 0s: must be positive"},
	} {
		t.Setenv("RUNNEL_ROLE", tc.env)
		var stderr strings.Builder
		args := append([]string{"--data-dir", t.TempDir()}, tc.args...)
		if code := serveMain(args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("serve %q (RUNNEL_ROLE=%q): exit %d, %q; want 2 and %q", tc.args, tc.env, code, stderr.String(), tc.want)
		}
	}
}

// TestMetaNodesFailover is issue 16's meta fault test with two processes:
// two `runnel serve --role meta` nodes on one throwaway PostgreSQL
// metastore. One leads (term 1), the other is a standby. The leader is
// stopped (SIGSTOP) past its lease: the standby takes over (term 2) and,
// as leader, marks the stopped node expired. The old leader is resumed
// (SIGCONT): its first commit (its leader duty, a fenced write) is
// refused by the term check, it steps down to standby instead of
// crashing, and registers again under a new id. I1/I2: one writer.
func TestMetaNodesFailover(t *testing.T) {
	url := pgtest.NewDatabase(t)
	bin := servertest.BuildBinary(t)
	const lease = time.Second
	start := func(name string) *servertest.Process {
		return servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: t.TempDir(),
			Args: []string{"--role", "meta", "--meta-store", url, "--advertise", "127.0.0.1:" + name,
				"--lease-ttl", lease.String(), "--log-level", "info"}})
	}
	ctx := context.Background()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	procs := map[string]*servertest.Process{"7001": start("7001")}
	// The first node leads before the second starts, so which one leads
	// is known.
	waitFor(t, procs, "the first meta node to lead", func() bool {
		term, holder := metaTerm(t, db)
		return term == 1 && holder == "node 1"
	})
	procs["7002"] = start("7002")
	waitFor(t, procs, "the second meta node to register", func() bool {
		return nodeStates(t, db) == "1:7001:meta:running,2:7002:meta:running"
	})
	waitLog(t, procs["7002"], "standby: another node leads the meta role")

	leader, standby := procs["7001"], procs["7002"]
	if err := leader.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			leader.Cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	waitFor(t, procs, "the standby to take over", func() bool {
		term, holder := metaTerm(t, db)
		return term == 2 && holder == "node 2"
	})
	waitFor(t, procs, "the new leader to mark the stopped node expired", func() bool {
		return nodeStates(t, db) == "1:7001:meta:expired,2:7002:meta:running"
	})
	if err := leader.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	waitLog(t, leader, "meta leadership lost; stepping down")
	waitLog(t, leader, "stepped down to standby")
	// The resumed leader's first act is its duty, a fenced commit. It is
	// refused by the term check — or, when the stop caught it inside a
	// transaction, PostgreSQL had already ended that session (the idle
	// bound that let the standby take over) and the renewal after it is
	// refused. Either way nothing it did after the takeover committed.
	logText := readLog(t, leader)
	refused := `meta leader's commit refused: another node leads now" err="cluster: expire lapsed nodes: meta leadership lost: this node held term 1, but the meta store's term is now 2 (held by node 2); commit refused"`
	killed := "terminating connection due to idle-in-transaction timeout"
	switch {
	case strings.Contains(logText, refused):
		t.Log("the resumed leader's duty commit was refused by the term check")
	case strings.Contains(logText, killed) && strings.Contains(logText, "this node held term 1, but the meta store's term is now 2 (held by node 2); commit refused"):
		t.Log("the stop caught the leader inside a transaction: PostgreSQL ended it, and the renewal after it was refused")
	default:
		t.Fatalf("the resumed leader was not refused; log:\n%s", logText)
	}
	waitFor(t, procs, "the old leader to register again", func() bool {
		return nodeStates(t, db) == "1:7001:meta:expired,2:7002:meta:running,3:7001:meta:running"
	})
	if term, holder := metaTerm(t, db); term != 2 || holder != "node 2" {
		t.Fatalf("leadership after the old leader resumed: term %d held by %s", term, holder)
	}
	for name, p := range procs {
		if p.Exited() {
			t.Fatalf("meta node %s exited: %v\n%s", name, p.WaitErr(), servertest.Tail(p.LogPath))
		}
	}
	// Both stop cleanly and leave the node table.
	for _, p := range []*servertest.Process{leader, standby} {
		if err := servertest.ExitedCleanly(p.Signal(syscall.SIGTERM)); err != nil {
			t.Fatalf("SIGTERM: %v\n%s", err, servertest.Tail(p.LogPath))
		}
	}
	if got := nodeStates(t, db); got != "1:7001:meta:expired,2:7002:meta:expired,3:7001:meta:expired" {
		t.Fatalf("nodes after shutdown: %s", got)
	}
}

func metaTerm(t *testing.T, db *pgx.Conn) (int64, string) {
	t.Helper()
	var term int64
	var holder string
	err := db.QueryRow(context.Background(), `SELECT term, holder FROM cluster_meta_term WHERE id = 1`).Scan(&term, &holder)
	if err != nil && err != pgx.ErrNoRows && !strings.Contains(err.Error(), "does not exist") {
		t.Fatal(err)
	}
	return term, holder
}

// nodeStates renders the node table as id:port:roles:state, by id.
func nodeStates(t *testing.T, db *pgx.Conn) string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id, port, roles, state FROM cluster_worker_node ORDER BY id`)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return ""
		}
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id int64
		var port int
		var roles, state string
		if err := rows.Scan(&id, &port, &roles, &state); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%d:%s:%s", id, port, roles, state))
	}
	return strings.Join(out, ",")
}

// waitFor polls cond (bounded), failing with the processes' logs.
func waitFor(t *testing.T, procs map[string]*servertest.Process, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var logs strings.Builder
			for name, p := range procs {
				fmt.Fprintf(&logs, "--- %s:\n%s\n", name, servertest.Tail(p.LogPath))
			}
			t.Fatalf("timed out waiting for %s\n%s", what, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readLog(t *testing.T, p *servertest.Process) string {
	t.Helper()
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitLog(t *testing.T, p *servertest.Process, text string) {
	t.Helper()
	waitFor(t, map[string]*servertest.Process{"log": p}, fmt.Sprintf("%q in the log", text), func() bool {
		return strings.Contains(readLog(t, p), text)
	})
}

// TestClusterSettingsConfig: advertise, lease_ttl and remote_compaction come from the
// configuration file like every setting, a bad lease_ttl in the file or
// in RUNNEL_LEASE_TTL is refused, and the flag wins over the file.
func TestClusterSettingsConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runnel.toml")
	if err := os.WriteFile(path, []byte("role = \"meta\"\nadvertise = \"10.0.0.5:4566\"\nlease_ttl = \"3s\"\nremote_compaction = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	role := fs.String("role", "all", "")
	advertise := fs.String("advertise", "", "")
	lease := fs.Duration("lease-ttl", 10*time.Second, "")
	remote := fs.Bool("remote-compaction", false, "")
	if err := fs.Parse([]string{"--lease-ttl", "4s"}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fs, path, nil); err != nil {
		t.Fatal(err)
	}
	if *role != "meta" || *advertise != "10.0.0.5:4566" || *lease != 4*time.Second || !*remote {
		t.Fatalf("role=%s advertise=%s lease-ttl=%v remote-compaction=%v", *role, *advertise, *lease, *remote)
	}
	if err := os.WriteFile(path, []byte("lease_ttl = \"soon\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fs, path, nil); err == nil || !strings.Contains(err.Error(), "lease_ttl") {
		t.Fatalf("bad lease_ttl in the file: %v", err)
	}
	t.Setenv("RUNNEL_LEASE_TTL", "soon")
	var stderr strings.Builder
	if code := serveMain(nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "RUNNEL_LEASE_TTL") {
		t.Fatalf("serve with RUNNEL_LEASE_TTL=soon: exit %d, %q", code, stderr.String())
	}
}
