package servertest

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

// BuildBinary compiles cmd/runnel of the module that holds the calling
// test into a temporary directory and returns the binary's path.
//
// RUNNEL_TEST_BIN=path skips the build and uses that binary instead.
func BuildBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("RUNNEL_TEST_BIN"); bin != "" {
		return bin
	}
	bin, err := BuildBinaryInto(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildBinaryInto compiles cmd/runnel of the module that holds the
// calling test into dir and returns the binary's path (for a package
// whose tests share one build).
func BuildBinaryInto(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not inside a module (%q)", gomod)
	}
	bin := filepath.Join(dir, "runnel")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/runnel")
	cmd.Dir = filepath.Dir(gomod)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/runnel: %v\n%s", err, b)
	}
	return bin, nil
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// ProcessOptions configure StartProcess.
type ProcessOptions struct {
	// DataDir is the server's data directory (required).
	DataDir string
	// LogPath receives the server's stdout and stderr, appended (default:
	// runnel.log in a temporary directory).
	LogPath string
	// Args replace the default extra flags
	// (--barrier-interval 50ms --log-level warn); --listen and --data-dir
	// are always passed.
	Args []string
	// Env is added to the test's environment (KEY=value entries).
	Env []string
}

// Process is one running `runnel serve` subprocess.
type Process struct {
	// Cmd is the running command.
	Cmd *exec.Cmd
	// Addr is the pgwire listen address.
	Addr string
	// HTTPAddr is the address of the HTTP listener (metrics, dashboard):
	// a free loopback port, never the fixed default, so that processes of
	// tests running at once do not collide.
	HTTPAddr string
	// LogPath holds the server's output.
	LogPath string

	done    chan struct{} // closed when the process has exited
	waitErr error
}

// StartProcess starts bin serving opts.DataDir on a fresh loopback port.
// It does not wait for readiness (see WaitReady). The process is killed
// when the test ends if it is still running, and also if the test binary
// dies (no orphans).
func StartProcess(t testing.TB, bin string, opts ProcessOptions) *Process {
	t.Helper()
	if opts.DataDir == "" {
		t.Fatal("servertest.StartProcess: no data directory")
	}
	if opts.LogPath == "" {
		opts.LogPath = filepath.Join(t.TempDir(), "runnel.log")
	}
	args := opts.Args
	if args == nil {
		args = []string{"--barrier-interval", BarrierInterval.String(), "--log-level", "warn"}
	}
	logf, err := os.OpenFile(opts.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{Addr: FreeAddr(t), HTTPAddr: FreeAddr(t), LogPath: opts.LogPath, done: make(chan struct{})}
	fmt.Fprintf(logf, "=== start on %s at %s\n", p.Addr, time.Now().Format(time.RFC3339Nano))
	p.Cmd = exec.Command(bin, append([]string{"serve", "--listen", p.Addr, "--http-listen", p.HTTPAddr, "--data-dir", opts.DataDir}, args...)...)
	p.Cmd.Stdout, p.Cmd.Stderr = logf, logf
	if len(opts.Env) > 0 {
		p.Cmd.Env = append(os.Environ(), opts.Env...)
	}
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.Cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start runnel: %v", err)
	}
	go func() {
		p.waitErr = p.Cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.Signal(syscall.SIGKILL) })
	return p
}

// URL is the postgres:// URL of database dev as user root.
func (p *Process) URL() string { return URL(p.Addr) }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitErr is the result of waiting for the process; valid once Exited.
func (p *Process) WaitErr() error {
	<-p.done
	return p.waitErr
}

// SignalTimeout bounds Signal's wait for the process to exit.
const SignalTimeout = 60 * time.Second

// Signal sends sig and waits for the process to exit (SIGKILL after
// SignalTimeout, with an error). It returns the wait result.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return p.waitErr
	}
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(SignalTimeout):
		_ = p.Cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("runnel did not exit within %v of %v", SignalTimeout, sig)
	}
	return p.waitErr
}

// WaitReady polls until the server accepts a session and answers a query,
// failing the test (with the log's tail) if the process exits or limit
// passes first.
func (p *Process) WaitReady(t testing.TB, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		if p.Exited() {
			t.Fatalf("runnel exited during startup (%v); log %s:\n%s", p.waitErr, p.LogPath, Tail(p.LogPath))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, p.URL())
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
	t.Fatalf("runnel not ready after %v: %v; log %s:\n%s", limit, last, p.LogPath, Tail(p.LogPath))
}

// Tail returns the last few KiB of a log file.
func Tail(path string) string {
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

// ExitedCleanly returns nil if a process's wait result is a 0 exit status,
// and an error describing the exit otherwise.
func ExitedCleanly(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("runnel exited with %v", ee.ProcessState)
	}
	return err
}

// ProcessCPU is the CPU time (user + system) this process has used so
// far: benchmarks divide by it for a per-core figure that a machine
// shared with other work does not skew.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
