package crashtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// sharedBuild is the one build of cmd/runnel every test of the package
// runs (each used to build its own: about 30 s apiece on a loaded 2-core
// machine). TestMain removes its directory.
var sharedBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

// buildRunnel compiles cmd/runnel from the module that holds this package
// (once per test binary) and returns the binary's path.
//
// RUNNEL_CRASH_BIN=path skips the build and uses that binary instead.
func buildRunnel(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("RUNNEL_CRASH_BIN"); bin != "" {
		return bin
	}
	sharedBuild.once.Do(func() {
		if sharedBuild.dir, sharedBuild.err = os.MkdirTemp("", "runnel-crashtest-bin-"); sharedBuild.err == nil {
			sharedBuild.bin, sharedBuild.err = servertest.BuildBinaryInto(sharedBuild.dir)
		}
	})
	if sharedBuild.err != nil {
		t.Fatal(sharedBuild.err)
	}
	return sharedBuild.bin
}

// proc is one running `runnel serve` subprocess.
type proc struct{ *servertest.Process }

// startRunnel starts the binary on dataDir and a fresh loopback port,
// appending its output to logPath. It does not wait for readiness; see
// waitReady. The caller must stop it (crashRun.start registers that).
func startRunnel(t *testing.T, bin, dataDir, logPath string) *proc {
	t.Helper()
	return &proc{servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: dataDir, LogPath: logPath})}
}

func (p *proc) url() string { return p.URL() }

func (p *proc) exited() bool { return p.Exited() }

// signal sends sig and waits for the process to exit.
func (p *proc) signal(sig syscall.Signal) error { return p.Signal(sig) }

// waitReady polls until the server accepts a session and answers a query.
func (p *proc) waitReady(t *testing.T, limit time.Duration) {
	t.Helper()
	p.WaitReady(t, limit)
}

// keepLog is called when a test failed: it asks a still-running server for
// a goroutine dump (SIGQUIT), then copies the whole server log out of the
// test's temporary directory and returns the copy's path.
func keepLog(p *proc, logPath string, seed int64) string {
	if p != nil && !p.exited() {
		_ = p.Cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.Done():
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
func tail(path string) string { return servertest.Tail(path) }

// exitedCleanly reports whether a process ended with status 0.
func exitedCleanly(err error) error { return servertest.ExitedCleanly(err) }
