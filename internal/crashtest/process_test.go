package crashtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// buildRunnel compiles cmd/runnel from the module that holds this package
// into a temporary directory and returns the binary's path.
//
// RUNNEL_CRASH_BIN=path skips the build and uses that binary instead.
func buildRunnel(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("RUNNEL_CRASH_BIN"); bin != "" {
		return bin
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatalf("go env GOMOD: not inside a module (%q)", gomod)
	}
	bin := filepath.Join(t.TempDir(), "runnel")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/runnel")
	cmd.Dir = filepath.Dir(gomod)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/runnel: %v\n%s", err, b)
	}
	return bin
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// proc is one running `runnel serve` subprocess.
type proc struct {
	cmd     *exec.Cmd
	addr    string
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error
}

// startRunnel starts the binary on dataDir and a fresh loopback port,
// appending its output to logPath. It does not wait for readiness; see
// waitReady. The caller must stop it (crashRun.start registers that).
func startRunnel(t *testing.T, bin, dataDir, logPath string) *proc {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{addr: freeAddr(t), logPath: logPath, done: make(chan struct{})}
	fmt.Fprintf(logf, "=== start on %s at %s\n", p.addr, time.Now().Format(time.RFC3339Nano))
	p.cmd = exec.Command(bin, "serve", "--listen", p.addr, "--data-dir", dataDir,
		"--barrier-interval", "50ms", "--log-level", "warn")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// If the test binary dies, so does the server (no orphans).
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start runnel: %v", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p
}

func (p *proc) url() string {
	return fmt.Sprintf("postgres://root@%s/dev?sslmode=disable", p.addr)
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig and waits for the process to exit.
func (p *proc) signal(sig syscall.Signal) error {
	if p.exited() {
		return p.waitErr
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("runnel did not exit within 60s of %v", sig)
	}
	return p.waitErr
}

// waitReady polls until the server accepts a session and answers a query.
func (p *proc) waitReady(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		if p.exited() {
			t.Fatalf("runnel exited during startup (%v); log %s:\n%s", p.waitErr, p.logPath, tail(p.logPath))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, p.url())
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			conn.Close(context.Background())
		}
		cancel()
		if err == nil {
			return
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("runnel not ready after %v: %v; log %s:\n%s", limit, last, p.logPath, tail(p.logPath))
}

// keepLog is called when a test failed: it asks a still-running server for
// a goroutine dump (SIGQUIT), then copies the whole server log out of the
// test's temporary directory and returns the copy's path.
func keepLog(p *proc, logPath string, seed int64) string {
	if p != nil && !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		return err.Error()
	}
	kept := filepath.Join(os.TempDir(), fmt.Sprintf("runnel-crashtest-%d.log", seed))
	if err := os.WriteFile(kept, b, 0o644); err != nil {
		return err.Error()
	}
	return kept
}

// tail returns the last few KiB of a log file.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	const n = 4096
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// exitedCleanly reports whether a process ended with status 0.
func exitedCleanly(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("runnel exited with %v", ee.ProcessState)
	}
	return err
}
