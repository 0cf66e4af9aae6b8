package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoBinaries is returned (wrapped) when no PostgreSQL server binaries are
// installed.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found; run scripts/install-deps.sh")

// superuser is the role initdb creates; tests connect as it.
const superuser = "postgres"

// startTimeout bounds how long we wait for a started postmaster to accept
// connections. initdb plus start takes 2–5 s on a loaded 2-core machine.
const startTimeout = 60 * time.Second

// Cluster is one running PostgreSQL cluster.
type Cluster struct {
	// Dir holds the data directory (Dir/data), the unix socket and the
	// server log (Dir/postgres.log).
	Dir  string
	Port int

	// settings are extra server settings (-c name=value), beyond the
	// defaults start sets.
	settings map[string]string

	cmd      *exec.Cmd
	exited   chan struct{} // closed when the postmaster process has been reaped
	waitErr  error
	stopOnce sync.Once
	stopErr  error
	ownsDir  bool // Stop removes Dir
}

// URL returns a postgres:// URL for database db (pgx- and libpq-compatible).
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, c.Port, db)
}

// PID is the postmaster's process id.
func (c *Cluster) PID() int { return c.cmd.Process.Pid }

// LogTail returns the last n bytes of the server log, for error messages.
func (c *Cluster) LogTail(n int) string { return tail(filepath.Join(c.Dir, "postgres.log"), n) }

// BinDir finds the directory holding initdb and postgres: $PGTEST_BIN_DIR,
// else the newest /usr/lib/postgresql/*/bin (preferring 15, the version the
// project targets), else the directory of initdb on $PATH.
func BinDir() (string, error) {
	if d := os.Getenv("PGTEST_BIN_DIR"); d != "" {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
		return "", fmt.Errorf("PGTEST_BIN_DIR=%s has no initdb/postgres: %w", d, ErrNoBinaries)
	}
	if isFile("/usr/lib/postgresql/15/bin/initdb") && isFile("/usr/lib/postgresql/15/bin/postgres") {
		return "/usr/lib/postgresql/15/bin", nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return versionOf(matches[i]) > versionOf(matches[j]) })
	for _, m := range matches {
		d := filepath.Dir(m)
		if isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func versionOf(initdbPath string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdbPath))))
	return v
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// StartStandalone starts a cluster whose files live in dir, for use outside
// tests. If dir already holds a cluster made by an earlier call
// (dir/data/PG_VERSION exists) it is reused, otherwise initdb creates one.
// An empty dir means a fresh temporary directory that stop removes; a dir the
// caller names is left in place. stop shuts the server down (fast shutdown)
// and waits for it; the server also shuts down by itself when this process
// exits.
func StartStandalone(dir string) (url string, stop func() error, err error) {
	c, err := startCluster(dir, nil)
	if err != nil {
		return "", nil, err
	}
	return c.URL("postgres"), c.Stop, nil
}

// StartCluster is StartStandalone returning the Cluster itself.
func StartCluster(dir string) (*Cluster, error) { return startCluster(dir, nil) }

// LogicalSettings are the server settings logical replication (CDC) needs.
var LogicalSettings = map[string]string{
	"wal_level":             "logical",
	"max_replication_slots": "40",
	"max_wal_senders":       "40",
}

// StartClusterWith is StartCluster with extra server settings (name →
// value, passed as -c name=value after the defaults), e.g. LogicalSettings.
func StartClusterWith(dir string, settings map[string]string) (*Cluster, error) {
	return startCluster(dir, settings)
}

func startCluster(dir string, settings map[string]string) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, settings: settings}
	if dir == "" {
		sweepStale()
		d, err := os.MkdirTemp(tempRoot(), fmt.Sprintf("%s%d-", stalePrefix, os.Getpid()))
		if err != nil {
			return nil, fmt.Errorf("pgtest: temp dir: %w", err)
		}
		c.Dir, c.ownsDir = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pgtest: create %s: %w", dir, err)
	}
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %s: %w", c.Dir, err)
	}
	c.Dir = abs
	fail := func(err error) (*Cluster, error) {
		if c.ownsDir {
			os.RemoveAll(c.Dir)
		}
		return nil, err
	}
	if cred != nil {
		// The server user must own its directory tree, and reach it.
		if err := checkReachable(c.Dir); err != nil {
			return fail(err)
		}
		if err := chownTree(c.Dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}
	data := filepath.Join(c.Dir, "data")
	if !isFile(filepath.Join(data, "PG_VERSION")) {
		if err := initdb(bin, data, cred, c.Dir); err != nil {
			return fail(err)
		}
	}
	// A free port can be taken by someone else between our probe and the
	// server's bind; try a few ports before giving up.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		c.Port = port
		if lastErr = c.start(bin, data, cred); lastErr == nil {
			return c, nil
		}
	}
	return fail(lastErr)
}

func initdb(bin, data string, cred *syscall.Credential, logDir string) error {
	cmd := exec.Command(filepath.Join(bin, "initdb"),
		"-D", data, "-U", superuser, "--auth=trust", "--encoding=UTF8", "--locale=C",
		"--no-sync")
	cmd.Env = serverEnv()
	cmd.Dir = logDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: initdb %s: %w\n%s", data, err, out)
	}
	return nil
}

func (c *Cluster) start(bin, data string, cred *syscall.Credential) error {
	logPath := filepath.Join(c.Dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: server log: %w", err)
	}
	defer logf.Close() // the child holds its own copy
	cmd := exec.Command(filepath.Join(bin, "postgres"),
		"-D", data,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port="+strconv.Itoa(c.Port),
		"-c", "unix_socket_directories="+c.Dir,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "shared_buffers=32MB",
		"-c", "max_prepared_transactions=20",
		"-c", "log_min_messages=warning",
		"-c", "logging_collector=off",
	)
	names := make([]string, 0, len(c.settings))
	for k := range c.settings {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		cmd.Args = append(cmd.Args, "-c", k+"="+c.settings[k])
	}
	cmd.Env = serverEnv()
	cmd.Dir = c.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		// SIGINT is PostgreSQL's "fast shutdown": the server goes away
		// cleanly when this process dies, however it dies.
		Pdeathsig: syscall.SIGINT,
		// Own process group so a ^C to `go test` does not reach the server
		// before our own shutdown does.
		Setpgid: true,
	}
	if err := startOnLockedThread(cmd); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	c.cmd = cmd
	c.exited = make(chan struct{})
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	if err := c.waitReady(); err != nil {
		c.kill()
		return err
	}
	return nil
}

func (c *Cluster) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var lastErr error
	for {
		select {
		case <-c.exited:
			return fmt.Errorf("pgtest: postgres exited during start (%v):\n%s", c.waitErr, c.LogTail(2000))
		default:
		}
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(cctx, c.URL("postgres"))
		ccancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres on port %d not ready after %v: %v\n%s", c.Port, startTimeout, lastErr, c.LogTail(2000))
		case <-c.exited:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop shuts the server down (fast shutdown, then immediate after 20 s,
// then SIGKILL) and waits for the postmaster to exit. A temporary directory
// made by the cluster is removed. Stop is idempotent.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopErr = c.shutdown()
		if c.ownsDir {
			if err := os.RemoveAll(c.Dir); err != nil && c.stopErr == nil {
				c.stopErr = fmt.Errorf("pgtest: remove %s: %w", c.Dir, err)
			}
		}
	})
	return c.stopErr
}

func (c *Cluster) shutdown() error {
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, 20 * time.Second}, {syscall.SIGQUIT, 5 * time.Second}, {syscall.SIGKILL, 5 * time.Second}} {
		select {
		case <-c.exited:
			return nil
		default:
		}
		_ = c.cmd.Process.Signal(step.sig)
		select {
		case <-c.exited:
			return nil
		case <-time.After(step.wait):
		}
	}
	return fmt.Errorf("pgtest: postgres pid %d did not exit", c.cmd.Process.Pid)
}

func (c *Cluster) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// Exited is closed when the postmaster process has exited.
func (c *Cluster) Exited() <-chan struct{} { return c.exited }

// serverCredential returns the credential to run the server with: the
// postgres OS user when we are root, nil (ourselves) otherwise.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root needs a 'postgres' OS user to run the server (initdb refuses root): %w; run scripts/install-deps.sh", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func serverEnv() []string {
	env := []string{"LC_ALL=C", "LANG=C", "TZ=UTC"}
	if p := os.Getenv("PATH"); p != "" {
		env = append(env, "PATH="+p)
	}
	return env
}

func chownTree(root string, uid, gid int) error {
	return filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			return fmt.Errorf("pgtest: chown %s: %w", p, err)
		}
		return nil
	})
}

// checkReachable fails when an ancestor of dir is not searchable by other
// users, so the postgres OS user could not reach its own directory.
func checkReachable(dir string) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("pgtest: %s: %w", d, err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("pgtest: %s is not searchable by the postgres OS user (mode %v); put the cluster directory elsewhere", d, st.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tempRoot is where temporary clusters live. A unix socket path is limited
// to ~107 bytes, so a long $TMPDIR falls back to /tmp.
func tempRoot() string {
	d := os.TempDir()
	if len(d) > 60 {
		return "/tmp"
	}
	return d
}

const stalePrefix = "runnel-pgtest-"

// sweepStale removes temporary cluster directories whose creating process is
// gone and whose postmaster (if any) is gone too: leftovers of test binaries
// that were killed before they could clean up.
func sweepStale() {
	entries, err := os.ReadDir(tempRoot())
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, stalePrefix) {
			continue
		}
		rest := strings.TrimPrefix(name, stalePrefix)
		pidStr, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || processAlive(pid) {
			continue
		}
		dir := filepath.Join(tempRoot(), name)
		if b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid")); err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			if pm, err := strconv.Atoi(strings.TrimSpace(first)); err == nil && processAlive(pm) {
				continue
			}
		}
		os.RemoveAll(dir)
	}
}

// processAlive reports whether pid names a live (non-zombie) process.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Format: pid (comm) state ...; comm may contain spaces and parens.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// The parent-death signal is tied to the OS thread that forked the child,
// not to the process: if that thread exits, the child is signalled although
// we are alive. Go may retire threads, so every server is forked from one
// goroutine locked to its thread that never returns.
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
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawnReqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnReqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}
