package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/s3test"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestCompactorNode is issue 16's compactor test with processes: a
// `--role all --remote-compaction` node and `--role compactor` nodes on
// one throwaway PostgreSQL metastore and one shared object store (a
// directory, and versitygw as S3). Rows written over pgwire fill L0; the meta node plans the
// compaction as a task, the first compactor claims it, writes its
// outputs and is SIGKILLed at the dangerous point (paused there by
// RUNNEL_TEST_COMPACTOR_PAUSE, outputs uploaded, result not handed back).
// Its claim's lease lapses, the meta node aborts the job (outputs to the
// deletion queue: `ctl storage check` clean, I1), a second compactor runs
// the re-planned job and the meta node commits its result (L0 → L1, the
// commit names the compactor that ran it). The table and a view over it
// are unchanged throughout, and the check stays clean.
func TestCompactorNode(t *testing.T) {
	bin := servertest.BuildBinary(t)
	t.Run("local-dir", func(t *testing.T) { testCompactorNode(t, bin, t.TempDir(), nil) })
	t.Run("versitygw", func(t *testing.T) {
		s3 := s3test.Start(t)
		s3.SetEnv(t) // for ctl storage check, run in this process
		testCompactorNode(t, bin, s3.URL(s3.NewBucket(t), "cluster"), s3.Env())
	})
}

// testCompactorNode runs TestCompactorNode on one shared object store
// (env: the processes' credentials for it).
func testCompactorNode(t *testing.T, bin, objects string, env []string) {
	url := pgtest.NewDatabase(t)
	const lease = time.Second
	stores := []string{"--meta-store", url, "--object-store", objects, "--lease-ttl", lease.String(), "--log-level", "info"}
	meta := servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: t.TempDir(), Env: env,
		Args: append([]string{"--remote-compaction", "--barrier-interval", "50ms"}, stores...)})
	meta.WaitReady(t, 60*time.Second)
	procs := map[string]*servertest.Process{"meta": meta}
	startCompactor := func(name string, extra ...string) *servertest.Process {
		p := servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: t.TempDir(), Env: append(append([]string(nil), env...), extra...),
			Args: append([]string{"--role", "compactor"}, stores...)})
		procs[name] = p
		return p
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, meta.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
	exec("CREATE MATERIALIZED VIEW mv AS SELECT count(*) AS n, sum(k) AS s FROM t")
	var wantN, wantS int64
	// write commits six epochs with data: one L0 file each, enough for
	// a compaction.
	write := func() {
		for i := 0; i < 6; i++ {
			lo := wantN + 1
			exec(fmt.Sprintf("INSERT INTO t SELECT g, 'row ' || g FROM generate_series(%d, %d) g", lo, lo+99))
			exec("FLUSH")
			wantN += 100
		}
		wantS = wantN * (wantN + 1) / 2
	}
	checkRows := func(when string) {
		t.Helper()
		var n, s, vn, vs int64
		if err := conn.QueryRow(ctx, "SELECT count(*), sum(k) FROM t").Scan(&n, &s); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, "SELECT n, s FROM mv").Scan(&vn, &vs); err != nil {
			t.Fatal(err)
		}
		if n != wantN || s != wantS || vn != wantN || vs != wantS {
			t.Fatalf("%s: t has %d rows summing to %d, mv says %d and %d; want %d and %d", when, n, s, vn, vs, wantN, wantS)
		}
	}
	db, err := metastore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	levels := func() string {
		t.Helper()
		text, err := storage.DescribeVersion(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, line := range strings.Split(text, "\n") {
			if m := regexp.MustCompile(`^(L\d): (\d+) ssts`).FindStringSubmatch(line); m != nil {
				out = append(out, m[1]+"="+m[2])
			}
		}
		return strings.Join(out, " ")
	}
	if got := levels(); strings.Contains(got, "L1=") {
		t.Fatalf("levels before any compaction: %s", got)
	}
	storageCheck := func(when string) {
		t.Helper()
		var out, errOut strings.Builder
		code := ctlMain([]string{"storage", "check", "--meta-store", url, "--object-store", objects, "--data-dir", t.TempDir()}, &out, &errOut)
		if code != 0 || !strings.Contains(out.String(), " 0 unowned, 0 missing") {
			t.Fatalf("ctl storage check %s: exit %d\n%s%s", when, code, out.String(), errOut.String())
		}
		t.Logf("ctl storage check %s: %s", when, strings.SplitN(out.String(), "\n", 2)[0])
	}

	// Each round: a compactor paused at a seeded pause point (the first
	// round after uploading its outputs, before handing them back) is
	// SIGKILLed there; the meta node aborts its job when the claim's lease
	// lapses; another compactor runs the re-planned job and the meta node
	// commits its result. RUNNEL_COMPACTOR_ROUNDS=N runs more rounds.
	rounds := 2
	if n, err := strconv.Atoi(os.Getenv("RUNNEL_COMPACTOR_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := time.Now().UnixNano()
	if v, err := strconv.ParseInt(os.Getenv("RUNNEL_TEST_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (RUNNEL_TEST_SEED replays the pause points), %d rounds", seed, rounds)
	rng := rand.New(rand.NewSource(seed))
	points := []storage.HookPoint{storage.HookAfterOutputsBeforeCommit, storage.HookBeforeFirstOutput}
	var killedID, finisherID int64
	var finisher *servertest.Process
	for round := 0; round < rounds; round++ {
		point := points[0]
		if round > 0 {
			point = points[rng.Intn(len(points))]
		}
		t.Logf("round %d: kill the compactor at %s", round, point)
		killed := startCompactor(fmt.Sprintf("killed %d", round), server.CompactorPauseEnv+"="+string(point))
		write()
		checkRows(fmt.Sprintf("round %d, before compaction", round))
		waitLog(t, killed, "compactor paused at a test point")
		job := regexp.MustCompile(`point=` + string(point) + ` job=(\d+)`).FindStringSubmatch(readLog(t, killed))
		if job == nil {
			t.Fatalf("no paused job in the compactor's log:\n%s", readLog(t, killed))
		}
		storageCheck(fmt.Sprintf("round %d, the compactor paused at %s (what it wrote is owned by the job record)", round, point))
		if err := killed.Signal(syscall.SIGKILL); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("SIGKILL: %v", err)
		}
		killedID = nodeID(t, db, killed)
		waitLog(t, meta, fmt.Sprintf("compaction %s: the lease of its claim by compactor node %d lapsed", job[1], killedID))
		storageCheck(fmt.Sprintf("round %d, after the killed compactor's job was aborted", round))
		checkRows(fmt.Sprintf("round %d, after the abort", round))

		// Another compactor runs the re-planned job; the meta node commits it.
		finisher = startCompactor(fmt.Sprintf("finisher %d", round))
		waitLog(t, finisher, "compaction task handed back")
		finisherID = nodeID(t, db, finisher)
		waitFor(t, procs, "a commit of the finishing compactor's result", func() bool {
			return regexp.MustCompile(`result=committed output_level=\d+ .*executed_by="node ` + strconv.FormatInt(finisherID, 10) + `"`).MatchString(readLog(t, meta))
		})
		if got := levels(); !strings.Contains(got, "L1=") {
			t.Fatalf("levels after round %d: %s; want files in L1", round, got)
		} else {
			t.Logf("levels after round %d: %s", round, got)
		}
		checkRows(fmt.Sprintf("round %d, after the compaction", round))
		storageCheck(fmt.Sprintf("round %d, after the compaction", round))
		if round < rounds-1 {
			// The next round's paused compactor must be the one to claim.
			if err := servertest.ExitedCleanly(finisher.Signal(syscall.SIGTERM)); err != nil {
				t.Fatalf("finisher: SIGTERM: %v\n%s", err, servertest.Tail(finisher.LogPath))
			}
		}
	}
	// The node table shows the compactors; the killed one expired.
	var rows []string
	r, err := conn.Query(ctx, "SELECT id, type, state FROM rw_catalog.rw_worker_nodes ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id int64
		var typ, state string
		if err := r.Scan(&id, &typ, &state); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, fmt.Sprintf("%d:%s:%s", id, typ, state))
	}
	if want := fmt.Sprintf("%d:compactor:expired,%d:compactor:running", killedID, finisherID); !strings.HasSuffix(strings.Join(rows, ","), want) {
		t.Fatalf("rw_worker_nodes: %v; want it to end with %s", rows, want)
	}
	for name, p := range map[string]*servertest.Process{"finisher": finisher, "meta": meta} {
		if err := servertest.ExitedCleanly(p.Signal(syscall.SIGTERM)); err != nil {
			t.Fatalf("%s: SIGTERM: %v\n%s", name, err, servertest.Tail(p.LogPath))
		}
	}
	storageCheck("after shutdown")
}

// nodeID is the id a process registered under (by its advertised port,
// the listen address by default).
func nodeID(t *testing.T, db *metastore.DB, p *servertest.Process) int64 {
	t.Helper()
	port, err := strconv.Atoi(p.Addr[strings.LastIndex(p.Addr, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.QueryRow(context.Background(), `SELECT MAX(id) FROM cluster_worker_node WHERE port = $1`, port).Scan(&id); err != nil {
		t.Fatalf("node id of the process on %s: %v", p.Addr, err)
	}
	return id
}
