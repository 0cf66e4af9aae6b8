package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/runneldb/runnel/internal/objstore"
)

// ErrNoBinary is returned (wrapped) when versitygw is not installed.
var ErrNoBinary = errors.New("versitygw not found (looked at $VERSITYGW, $PATH, $GOBIN, $GOPATH/bin, ~/go/bin); run scripts/install-deps.sh")

// startTimeout bounds how long a started server may take to answer.
const startTimeout = 30 * time.Second

// Server is one running versitygw.
type Server struct {
	Endpoint  string // 127.0.0.1:port
	AccessKey string
	SecretKey string
	Region    string
	// Dir is the POSIX backend root: one subdirectory per bucket.
	Dir string

	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	logPath  string
	stopOnce sync.Once
	stopErr  error
	ownsDir  bool
	buckets  atomic.Int64
}

// Binary finds the versitygw executable.
func Binary() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		if isExec(p) {
			return p, nil
		}
		return "", fmt.Errorf("VERSITYGW=%s is not an executable: %w", p, ErrNoBinary)
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("GOPATH"); d != "" {
		for _, e := range filepath.SplitList(d) {
			dirs = append(dirs, filepath.Join(e, "bin"))
		}
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(h, "go", "bin"))
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "versitygw"); isExec(p) {
			return p, nil
		}
	}
	return "", ErrNoBinary
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Start launches a server for the test and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := Binary(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("s3test: %v", err)
		}
		t.Skipf("s3test: %v", err)
	}
	s, err := StartStandalone("")
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("s3test: %v", err)
		}
	})
	return s
}

// StartStandalone launches a server whose buckets live under dir ("" = a
// temporary directory that Stop removes), for use outside tests.
func StartStandalone(dir string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{AccessKey: "runneltest", SecretKey: "runneltest-secret", Region: "us-east-1", Dir: dir}
	if dir == "" {
		sweepStale()
		d, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", stalePrefix, os.Getpid()))
		if err != nil {
			return nil, fmt.Errorf("s3test: temp dir: %w", err)
		}
		s.Dir, s.ownsDir = d, true
	}
	gw := filepath.Join(s.Dir, "gw")
	if err := os.MkdirAll(gw, 0o755); err != nil {
		return nil, fmt.Errorf("s3test: %w", err)
	}
	s.logPath = filepath.Join(s.Dir, "versitygw.log")
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if lastErr = s.start(bin, gw); lastErr == nil {
			return s, nil
		}
	}
	if s.ownsDir {
		os.RemoveAll(s.Dir)
	}
	return nil, lastErr
}

func (s *Server) start(bin, gw string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("s3test: free port: %w", err)
	}
	endpoint := l.Addr().String()
	l.Close()
	return s.startOn(bin, gw, endpoint)
}

// startOn launches versitygw serving gw on endpoint and waits for it.
func (s *Server) startOn(bin, gw, endpoint string) error {
	s.Endpoint = endpoint
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("s3test: log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin,
		"--port", s.Endpoint,
		"--access", s.AccessKey,
		"--secret", s.SecretKey,
		"--region", s.Region,
		"--quiet",
		"posix", gw)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.Dir}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := startOnLockedThread(cmd); err != nil {
		return fmt.Errorf("s3test: start %s: %w", bin, err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(); err != nil {
		cmd.Process.Kill()
		<-s.exited
		return err
	}
	return nil
}

func (s *Server) client() (*minio.Client, error) {
	return minio.New(s.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region:       s.Region,
		BucketLookup: minio.BucketLookupPath,
	})
}

func (s *Server) waitReady() error {
	c, err := s.client()
	if err != nil {
		return fmt.Errorf("s3test: client: %w", err)
	}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("s3test: versitygw exited during start (%v):\n%s", s.waitErr, s.LogTail(2000))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.BucketExists(ctx, "readiness-probe")
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("s3test: versitygw on %s not ready after %v: %v\n%s", s.Endpoint, startTimeout, err, s.LogTail(2000))
		}
		select {
		case <-s.exited:
		case <-time.After(30 * time.Millisecond):
		}
	}
}

// LogTail returns the last n bytes of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// CreateBucket creates a bucket with the given name.
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	c, err := s.client()
	if err != nil {
		return fmt.Errorf("s3test: client: %w", err)
	}
	if err := c.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		return fmt.Errorf("s3test: create bucket %s: %w", name, err)
	}
	return nil
}

// NewBucket creates a fresh, empty bucket and returns its name.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("runnel-test-%d", s.buckets.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.CreateBucket(ctx, name); err != nil {
		t.Fatal(err)
	}
	return name
}

// Config returns an objstore configuration for bucket/prefix on this server,
// credentials included.
func (s *Server) Config(bucket, prefix string) objstore.S3Config {
	return objstore.S3Config{
		Endpoint: s.Endpoint, Bucket: bucket, Prefix: prefix, Region: s.Region,
		AccessKey: s.AccessKey, SecretKey: s.SecretKey,
	}
}

// URL returns the s3:// URL objstore.Open accepts for bucket/prefix on this
// server. Credentials are not part of it: see Env / SetEnv.
func (s *Server) URL(bucket, prefix string) string {
	q := url.Values{"endpoint": {s.Endpoint}, "region": {s.Region}, "secure": {"false"}}
	return fmt.Sprintf("s3://%s/%s?%s", bucket, strings.TrimPrefix(prefix, "/"), q.Encode())
}

// Env returns the environment variables that carry this server's
// credentials, as KEY=VALUE.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey}
}

// SetEnv sets the credential variables for the rest of the test (not
// usable with t.Parallel).
func (s *Server) SetEnv(t testing.TB) {
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
}

// Stop kills the server and waits for it; a temporary directory is removed.
// versitygw keeps nothing in memory that matters, so SIGTERM then SIGKILL.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
		if s.ownsDir {
			if err := os.RemoveAll(s.Dir); err != nil {
				s.stopErr = fmt.Errorf("s3test: remove %s: %w", s.Dir, err)
			}
		}
	})
	return s.stopErr
}

const stalePrefix = "runnel-s3test-"

// sweepStale removes temporary server directories whose creating process
// has died (a killed test binary cannot clean up; its server died with it
// through Pdeathsig).
func sweepStale() {
	root := os.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), stalePrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue // still running (or the pid was reused: leave it)
		}
		os.RemoveAll(filepath.Join(root, e.Name()))
	}
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// The parent-death signal belongs to the forking OS thread; fork from one
// that never exits (see pgtest for the same reasoning).
var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func startOnLockedThread(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked
			for r := range spawnReqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnReqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}
