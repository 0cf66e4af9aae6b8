package tests

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/slt"
	"github.com/runneldb/runnel/internal/testutil/pgtest"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// sltDir holds the sqllogictest files; knownBugsDir the records that fail
// because of a Runnel bug.
const (
	sltDir       = "slt"
	knownBugsDir = "slt/known_bugs"
)

// recordTimeout bounds one attempt of one record: generous, because the
// machine is shared, but a hung statement must not hang the suite.
const recordTimeout = 60 * time.Second

// sltFiles lists the files to run: slt/*.slt, plus slt/known_bugs/*.slt
// when withKnownBugs. RUNNEL_SLT_FILES (a comma-separated list of base-name
// globs, e.g. "mv_*,dml") narrows the selection.
func sltFiles(t *testing.T, withKnownBugs bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(sltDir, "*.slt"))
	if err != nil {
		t.Fatal(err)
	}
	if withKnownBugs {
		bugs, err := filepath.Glob(filepath.Join(knownBugsDir, "*.slt"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, bugs...)
	}
	if len(files) == 0 {
		t.Fatalf("no .slt files under %s", sltDir)
	}
	filter := os.Getenv("RUNNEL_SLT_FILES")
	if filter == "" {
		return files
	}
	var out []string
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".slt")
		for _, pat := range strings.Split(filter, ",") {
			if ok, _ := filepath.Match(strings.TrimSuffix(strings.TrimSpace(pat), ".slt"), base); ok {
				out = append(out, f)
				break
			}
		}
	}
	if len(out) == 0 {
		t.Skipf("RUNNEL_SLT_FILES=%q selects no file", filter)
	}
	return out
}

// startServer opens a real Runnel server on a temporary data directory and
// serves it on a loopback listener until the test ends. It returns the
// postgres:// URL of database dev.
func startServer(t *testing.T) string {
	t.Helper()
	var opts []servertest.Option
	if os.Getenv("RUNNEL_SLT_SERVER_LOG") != "" {
		opts = append(opts, servertest.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	}
	return servertest.Start(t, opts...).URL()
}

// runFile runs one file against url and reports each failure at its
// file:line.
func runFile(t *testing.T, url, file string, labels []string) {
	t.Helper()
	res, err := slt.RunFiles(context.Background(), url, []string{file}, slt.Options{
		Labels:        labels,
		RecordTimeout: recordTimeout,
	})
	if err != nil {
		t.Fatalf("run %s: %v", file, err)
	}
	for _, f := range res.Failures {
		msg := f.String()
		if f.SQL != "" {
			msg += "\n  SQL: " + f.SQL
		}
		t.Error(msg)
	}
	t.Logf("%s: %s", file, res.Summary())
	if res.Passed == 0 && res.Failed == 0 {
		t.Errorf("%s: no record ran", file)
	}
}

// TestSLT runs every file against its own fresh Runnel server.
func TestSLT(t *testing.T) {
	withBugs := os.Getenv("RUNNEL_SLT_KNOWN_BUGS") == "1"
	for _, file := range sltFiles(t, withBugs) {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(file, sltDir+"/"), ".slt"), func(t *testing.T) {
			runFile(t, startServer(t), file, []string{"runnel"})
		})
	}
}

// TestSLTExpectationsOnPostgres runs every file, known bugs included,
// against a fresh database of a real PostgreSQL: an expectation that
// PostgreSQL does not meet is a wrong expectation. RUNNEL_SLT_SKIP_PG=1
// skips it.
func TestSLTExpectationsOnPostgres(t *testing.T) {
	if os.Getenv("RUNNEL_SLT_SKIP_PG") == "1" {
		t.Skip("RUNNEL_SLT_SKIP_PG=1")
	}
	for _, file := range sltFiles(t, true) {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(file, sltDir+"/"), ".slt"), func(t *testing.T) {
			url := pgtest.NewDatabase(t)
			runFile(t, url, postgresVersion(t, file), []string{"postgres"})
		})
	}
}

var (
	materializedView = regexp.MustCompile(`(?i)\b(CREATE|DROP)(\s+)MATERIALIZED\s+VIEW\b`)
	pgDirective      = "# pg: materialized-as-view"
)

// postgresVersion returns the file to run on PostgreSQL: the file itself,
// or, when its first line is the materialized-as-view directive, a copy
// with every CREATE/DROP MATERIALIZED VIEW rewritten to a plain view. Line
// numbers are preserved, so failures point at the original file's lines;
// the copy is named after the original.
func postgresVersion(t *testing.T, file string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(src), pgDirective) {
		return file
	}
	out := materializedView.ReplaceAll(src, []byte("${1}${2}VIEW"))
	dir := filepath.Join(t.TempDir(), filepath.Dir(file))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
