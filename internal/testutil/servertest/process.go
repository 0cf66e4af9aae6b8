package servertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

	t        testing.TB
	bin      string
	opts     ProcessOptions
	restarts int // launches on a fresh port after the first lost its port

	done    chan struct{} // closed when the current command has exited
	waitErr error
}

// maxPortRestarts bounds how often WaitReady starts the server again on a
// fresh port because another listener took the one FreeAddr chose.
const maxPortRestarts = 5

// StartProcess starts bin serving opts.DataDir on a fresh loopback port.
// It does not wait for readiness (see WaitReady). The process is killed
// when the test ends if it is still running, and also if the test binary
// dies (no orphans).
func StartProcess(t testing.TB, bin string, opts ProcessOptions) *Process {
	t.Helper()
	return startProcessOn(t, bin, opts, FreeAddr(t))
}

// startProcessOn is StartProcess on a given pgwire address (a test of the
// harness passes one that is already taken).
func startProcessOn(t testing.TB, bin string, opts ProcessOptions, addr string) *Process {
	t.Helper()
	if opts.DataDir == "" {
		t.Fatal("servertest.StartProcess: no data directory")
	}
	if opts.LogPath == "" {
		opts.LogPath = filepath.Join(t.TempDir(), "runnel.log")
	}
	if opts.Args == nil {
		opts.Args = []string{"--barrier-interval", BarrierInterval.String(), "--log-level", "warn"}
	}
	p := &Process{LogPath: opts.LogPath, t: t, bin: bin, opts: opts}
	p.launch(addr)
	t.Cleanup(func() { p.Signal(syscall.SIGKILL) })
	return p
}

// launch starts the command on addr (pgwire) and a fresh HTTP port.
func (p *Process) launch(addr string) {
	t := p.t
	t.Helper()
	logf, err := os.OpenFile(p.opts.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.Addr, p.HTTPAddr = addr, FreeAddr(t)
	p.done, p.waitErr = make(chan struct{}), nil
	fmt.Fprintf(logf, "=== start on %s at %s\n", p.Addr, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, append([]string{"serve", "--listen", p.Addr, "--http-listen", p.HTTPAddr, "--data-dir", p.opts.DataDir}, p.opts.Args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(p.opts.Env) > 0 {
		cmd.Env = append(os.Environ(), p.opts.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start runnel: %v", err)
	}
	p.Cmd = cmd
	done := p.done
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.waitErr = err
		close(done)
	}()
}

// relaunch kills the current command (it lost its port to another
// listener, or failed to bind one) and starts it again on fresh ports.
func (p *Process) relaunch(why string) {
	p.t.Helper()
	p.Signal(syscall.SIGKILL)
	p.restarts++
	p.t.Logf("servertest: %s; starting runnel again on a fresh port (%d of %d)", why, p.restarts, maxPortRestarts)
	p.launch(FreeAddr(p.t))
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
//
// FreeAddr's port is only free "a moment ago": another test's listener
// can take it before the server binds it, and a client would then talk to
// that other server. So WaitReady connects only once the listener on Addr
// is this process's own (checked in /proc), and if another process holds
// the port, or the server exited because an address was in use, it starts
// the server again on fresh ports (Addr changes).
func (p *Process) WaitReady(t testing.TB, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		if p.Exited() {
			if p.restarts < maxPortRestarts && strings.Contains(lastStart(p.LogPath), "address already in use") {
				p.relaunch("an address was in use")
				continue
			}
			t.Fatalf("runnel exited during startup (%v); log %s:\n%s", p.waitErr, p.LogPath, Tail(p.LogPath))
		}
		switch listenerOwner(p.Cmd.Process.Pid, p.Addr) {
		case ownerNone:
			last = fmt.Errorf("nothing listens on %s yet", p.Addr)
			time.Sleep(20 * time.Millisecond)
			continue
		case ownerOther:
			if p.restarts < maxPortRestarts {
				p.relaunch(fmt.Sprintf("another process listens on %s", p.Addr))
				continue
			}
			t.Fatalf("another process listens on %s, runnel's port; log %s:\n%s", p.Addr, p.LogPath, Tail(p.LogPath))
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

// lastStart is the log written since the last "=== start" line.
func lastStart(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndex(s, "=== start on "); i >= 0 {
		s = s[i:]
	}
	return s
}

type owner int

const (
	ownerNone  owner = iota // nothing listens on the address
	ownerSelf               // the process listens on it (or /proc cannot tell)
	ownerOther              // another process listens on it
)

// listenerOwner reports who holds the TCP listener on addr (an IPv4
// loopback host:port): it finds the listening socket's inode in
// /proc/net/tcp and looks for it among pid's descriptors. Where /proc
// cannot answer it says ownerSelf, so that WaitReady falls back to
// connecting.
func listenerOwner(pid int, addr string) owner {
	host, portText, err := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(portText)
	ip := net.ParseIP(host).To4()
	if err != nil || perr != nil || ip == nil {
		return ownerSelf
	}
	tab, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return ownerSelf
	}
	// /proc/net/tcp prints the address as the little-endian word in hex.
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], port)
	any := fmt.Sprintf("00000000:%04X", port)
	var inodes []string
	for _, line := range strings.Split(string(tab), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || (f[1] != local && f[1] != any) {
			continue
		}
		inodes = append(inodes, "socket:["+f[9]+"]")
	}
	if len(inodes) == 0 {
		return ownerNone
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return ownerSelf
	}
	for _, e := range ents {
		if link, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && slices.Contains(inodes, link) {
			return ownerSelf
		}
	}
	return ownerOther
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
