package pgwire

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const psqlPath = "/usr/bin/psql"

func runPsql(t *testing.T, addr string, env []string, args ...string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(psqlPath, append([]string{"-X", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", host, "-p", port, "-d", "dev"}, args...)...)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=10", "PGSSLMODE=prefer")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPsql(t *testing.T) {
	if _, err := os.Stat(psqlPath); err != nil {
		t.Skipf("psql not installed: %v", err)
	}
	eng := newFakeEngine()
	eng.users = map[string]AuthInfo{"root": {Superuser: true}, "alice": {SCRAMVerifier: NewSCRAMVerifier("pw")}}
	cfg := DefaultConfig()
	cfg.TLS = selfSignedTLS(t)
	ts := startServer(t, cfg, eng)

	out, err := runPsql(t, ts.addr, nil, "-U", "root", "-c", "SELECT 1, 'two', NULL")
	if err != nil || strings.TrimSpace(out) != "1|two|" {
		t.Fatalf("psql -c: %q %v", out, err)
	}
	// SCRAM over TLS from psql.
	out, err = runPsql(t, ts.addr, []string{"PGPASSWORD=pw", "PGSSLMODE=require"}, "-U", "alice", "-c", "SELECT 3")
	if err != nil || strings.TrimSpace(out) != "3" {
		t.Fatalf("psql alice: %q %v", out, err)
	}
	out, err = runPsql(t, ts.addr, []string{"PGPASSWORD=nope"}, "-U", "alice", "-c", "SELECT 3")
	if err == nil || !strings.Contains(out, "password authentication failed") {
		t.Fatalf("psql wrong password: %q %v", out, err)
	}
	// Errors are printed with their message.
	out, err = runPsql(t, ts.addr, nil, "-U", "root", "-c", "SELECT 1/0")
	if err == nil || !strings.Contains(out, "division by zero") {
		t.Fatalf("psql error: %q %v", out, err)
	}
	// \copy in (CSV with header) and out (text and CSV).
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("a,b\n1,hello\n2,\"with, comma\"\n3,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runPsql(t, ts.addr, nil, "-U", "root", "-c", `\copy t from '`+in+`' csv header`)
	if err != nil || strings.TrimSpace(out) != "COPY 3" {
		t.Fatalf("\\copy in: %q %v", out, err)
	}
	textOut := filepath.Join(dir, "out.txt")
	if out, err := runPsql(t, ts.addr, nil, "-U", "root", "-c", `\copy t to '`+textOut+`'`); err != nil {
		t.Fatalf("\\copy out: %q %v", out, err)
	}
	got, _ := os.ReadFile(textOut)
	if string(got) != "1\thello\n2\twith, comma\n3\t\\N\n" {
		t.Fatalf("\\copy out text: %q", got)
	}
	csvOut := filepath.Join(dir, "out.csv")
	if out, err := runPsql(t, ts.addr, nil, "-U", "root", "-c", `\copy t to '`+csvOut+`' csv header`); err != nil {
		t.Fatalf("\\copy out csv: %q %v", out, err)
	}
	got, _ = os.ReadFile(csvOut)
	if string(got) != "a,b\n1,hello\n2,\"with, comma\"\n3,\n" {
		t.Fatalf("\\copy out csv: %q", got)
	}
	// Several statements in one -c string, like a script.
	out, err = runPsql(t, ts.addr, nil, "-U", "root", "-c", "BEGIN; INSERT INTO t VALUES (4, 'x'); COMMIT; SELECT count(*) FROM t")
	if err != nil || strings.TrimSpace(out) != "BEGIN\nINSERT 0 1\nCOMMIT\n4" {
		t.Fatalf("psql script: %q %v", out, err)
	}
}
