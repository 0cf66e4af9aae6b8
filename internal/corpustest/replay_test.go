package corpustest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

// finding is one statement that killed, hung or confused the server.
type finding struct {
	kind string // death, hang, unresponsive, internal, panic-text, log-panic, memory
	file string
	line int
	sql  string
	msg  string
}

func (f finding) String() string {
	sql := f.sql
	if len(sql) > 400 {
		sql = sql[:400] + fmt.Sprintf("... (%d bytes)", len(f.sql))
	}
	return fmt.Sprintf("%s %s:%d: %s\n    %s", f.kind, f.file, f.line, f.msg, strings.ReplaceAll(sql, "\n", "\n    "))
}

// replayer holds the server under test and the tally.
type replayer struct {
	t        *testing.T
	bin      string
	dataDir  string
	logPath  string
	proc     *servertest.Process
	timeout  time.Duration // the server's statement_timeout
	limit    time.Duration // the client's bound: past it the statement hangs
	rssLimit int64         // bytes

	statements int
	ok         int
	codes      map[string]int
	findings   []finding
	peakRSS    int64
	logOffset  int64
}

func (r *replayer) start() {
	r.proc = servertest.StartProcess(r.t, r.bin, servertest.ProcessOptions{DataDir: r.dataDir, LogPath: r.logPath})
	r.proc.WaitReady(r.t, 2*time.Minute)
}

func (r *replayer) connect() (*pgconn.PgConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgconn.Connect(ctx, r.proc.URL())
	if err != nil {
		return nil, err
	}
	for _, s := range []string{
		fmt.Sprintf("SET statement_timeout = %d", r.timeout.Milliseconds()),
		"SET implicit_flush = true",
	} {
		if _, err := c.Exec(ctx, s).ReadAll(); err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				c.Close(context.Background())
				return nil, err
			}
		}
	}
	return c, nil
}

// alive reports whether a fresh session gets an answer to SELECT 1.
func (r *replayer) alive() error {
	if r.proc.Exited() {
		return fmt.Errorf("process exited: %v", r.proc.WaitErr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgconn.Connect(ctx, r.proc.URL())
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, "SELECT 1").ReadAll()
	return err
}

func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// logPanics returns the lines of the server's log written since the last
// call that show a panic or a Go fatal error.
func (r *replayer) logPanics() []string {
	b, err := os.ReadFile(r.logPath)
	if err != nil || int64(len(b)) <= r.logOffset {
		return nil
	}
	b = b[r.logOffset:]
	r.logOffset += int64(len(b))
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "panic") || strings.HasPrefix(l, "fatal error") || strings.HasPrefix(l, "runtime: ") || strings.HasPrefix(l, "SIGSEGV") {
			if len(l) > 300 {
				l = l[:300]
			}
			out = append(out, l)
		}
	}
	return out
}

func (r *replayer) add(f finding) {
	r.findings = append(r.findings, f)
	r.t.Logf("FINDING %s", f)
}

// restart brings a dead or stuck server back for the rest of the corpus.
func (r *replayer) restart() {
	_ = r.proc.Signal(syscall.SIGKILL)
	r.start()
}

func (r *replayer) replayFile(path string) {
	text, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	name := filepath.Base(path)
	var stmts []Stmt
	if strings.HasSuffix(path, ".slt") {
		stmts = SplitSLT(string(text))
	} else {
		stmts = SplitSQL(string(text))
	}
	conn, err := r.connect()
	if err != nil {
		r.add(finding{kind: "unresponsive", file: name, msg: "connect: " + err.Error()})
		r.restart()
		if conn, err = r.connect(); err != nil {
			r.t.Fatalf("cannot connect after restart: %v", err)
		}
	}
	defer func() { conn.Close(context.Background()) }()
	for _, s := range stmts {
		r.statements++
		ctx, cancel := context.WithTimeout(context.Background(), r.limit)
		began := time.Now()
		if copyFromStdin.MatchString(s.SQL) {
			_, err = conn.CopyFrom(ctx, bytes.NewReader(s.Copy), s.SQL)
		} else {
			_, err = conn.Exec(ctx, s.SQL).ReadAll()
		}
		took := time.Since(began)
		ctxErr := ctx.Err()
		cancel()
		f := finding{file: name, line: s.Line, sql: s.SQL}
		var pe *pgconn.PgError
		switch {
		case err == nil:
			r.ok++
		case errors.As(err, &pe):
			r.codes[pe.Code]++
			lower := strings.ToLower(pe.Message)
			switch {
			case pe.Code == "XX000":
				f.kind, f.msg = "internal", pe.Code+" "+pe.Message
				r.add(f)
			case strings.Contains(lower, "panic") || strings.Contains(lower, "runtime error") || strings.Contains(lower, "nil pointer") || strings.Contains(lower, "index out of range"):
				f.kind, f.msg = "panic-text", pe.Code+" "+pe.Message
				r.add(f)
			}
		default:
			r.codes["(no sqlstate)"]++
		}
		if err != nil && pe == nil && conn.IsClosed() {
			// A dying process may still be writing its stack traces.
			select {
			case <-r.proc.Done():
			case <-time.After(5 * time.Second):
			}
		}
		if r.proc.Exited() {
			f.kind, f.msg = "death", fmt.Sprintf("%v; log tail:\n%s", r.proc.WaitErr(), servertest.Tail(r.logPath))
			r.add(f)
			r.restart()
			conn.Close(context.Background())
			if conn, err = r.connect(); err != nil {
				r.t.Fatalf("cannot connect after restart: %v", err)
			}
			continue
		}
		if ctxErr != nil || took > r.timeout+5*time.Second {
			f.kind, f.msg = "hang", fmt.Sprintf("ran %v (statement_timeout %v): %v", took.Round(time.Millisecond), r.timeout, err)
			r.add(f)
		}
		if rs := rss(r.proc.Cmd.Process.Pid); rs > r.peakRSS {
			r.peakRSS = rs
			if rs > r.rssLimit {
				f.kind, f.msg = "memory", fmt.Sprintf("resident set %d MiB after the statement", rs>>20)
				r.add(f)
			}
		}
		if lines := r.logPanics(); len(lines) > 0 {
			f.kind, f.msg = "log-panic", strings.Join(lines, "\n    ")
			r.add(f)
		}
		if conn.IsClosed() || ctxErr != nil {
			if aerr := r.alive(); aerr != nil {
				f.kind, f.msg = "unresponsive", aerr.Error()
				r.add(f)
				r.restart()
			}
			conn.Close(context.Background())
			if conn, err = r.connect(); err != nil {
				r.add(finding{kind: "unresponsive", file: name, line: s.Line, msg: "reconnect: " + err.Error()})
				r.restart()
				if conn, err = r.connect(); err != nil {
					r.t.Fatalf("cannot connect after restart: %v", err)
				}
			}
		}
	}
}

// TestReplayCorpus replays every .sql and .slt file under
// RUNNEL_CORPUS_DIR (sorted by path) against one `runnel serve`
// subprocess and fails on any death, hang, unresponsive server, internal
// error, panic in an error or the log, or a resident set past
// RUNNEL_CORPUS_RSS_MB (default 4096). RUNNEL_CORPUS_TIMEOUT sets the
// server's statement_timeout (default 10s); a statement still running 20 s
// past it counts as a hang. RUNNEL_CORPUS_REPORT=path also writes the
// findings there.
func TestReplayCorpus(t *testing.T) {
	dir := os.Getenv("RUNNEL_CORPUS_DIR")
	if dir == "" {
		t.Skip("RUNNEL_CORPUS_DIR is not set (a directory of .sql / .slt files; docs/testing.md)")
	}
	var files []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() && (strings.HasSuffix(p, ".sql") || strings.HasSuffix(p, ".slt")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no .sql or .slt files under %s", dir)
	}
	rssMB, _ := strconv.ParseInt(os.Getenv("RUNNEL_CORPUS_RSS_MB"), 10, 64)
	if rssMB <= 0 {
		rssMB = 4096
	}
	timeout := envDuration("RUNNEL_CORPUS_TIMEOUT", 10*time.Second)
	r := &replayer{
		t:        t,
		bin:      servertest.BuildBinary(t),
		dataDir:  t.TempDir(),
		logPath:  filepath.Join(t.TempDir(), "runnel.log"),
		timeout:  timeout,
		limit:    timeout + 20*time.Second,
		rssLimit: rssMB << 20,
		codes:    map[string]int{},
	}
	r.start()
	began := time.Now()
	for _, f := range files {
		n, k := r.statements, len(r.findings)
		r.replayFile(f)
		t.Logf("%s: %d statements, %d findings (%v so far)", filepath.Base(f), r.statements-n, len(r.findings)-k, time.Since(began).Round(time.Second))
	}
	kinds := map[string]int{}
	for _, f := range r.findings {
		kinds[f.kind]++
	}
	var codes []string
	for c, n := range r.codes {
		codes = append(codes, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(codes)
	summary := fmt.Sprintf("%d files, %d statements in %v: %d ok; errors by SQLSTATE: %s; peak RSS %d MiB; findings %v",
		len(files), r.statements, time.Since(began).Round(time.Second), r.ok, strings.Join(codes, ", "), r.peakRSS>>20, kinds)
	t.Log(summary)
	if p := os.Getenv("RUNNEL_CORPUS_REPORT"); p != "" {
		var b strings.Builder
		b.WriteString(summary + "\n\n")
		for _, f := range r.findings {
			b.WriteString(f.String() + "\n\n")
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if len(r.findings) > 0 {
		t.Errorf("%d findings: %v", len(r.findings), kinds)
	}
	if err := r.alive(); err != nil {
		t.Errorf("server not answering at the end: %v", err)
	}
}
