package s3test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

func TestStartPutGetViaURL(t *testing.T) {
	s := Start(t)
	bucket := s.NewBucket(t)
	s.SetEnv(t)
	ctx := context.Background()
	st, err := objstore.Open(ctx, s.URL(bucket, "pre"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "a/b", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, "a/b")
	if err != nil || string(got) != "hello" {
		t.Fatalf("Get = %q, %v; want hello", got, err)
	}
	if _, err := st.Get(ctx, "missing"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Get missing: %v; want ErrNotFound", err)
	}
	pid := s.PID()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "after-stop", nil); err == nil {
		t.Fatalf("Put succeeded after the server (pid %d) was stopped", pid)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("S3TEST_HELPER") != "" {
		s, err := StartStandalone("")
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(2)
		}
		fmt.Printf("PID %d %s\n", s.PID(), s.Dir)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	os.Exit(m.Run())
}

// TestNoOrphanWhenBinaryDies kills a process that started a server and
// checks that the server dies with it.
func TestNoOrphanWhenBinaryDies(t *testing.T) {
	if _, err := Binary(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "S3TEST_HELPER=1")
	out, _ := cmd.Output()
	var pid int
	var dir string
	if _, err := fmt.Sscanf(string(out), "PID %d %s", &pid, &dir); err != nil {
		t.Fatalf("helper said %q", out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("versitygw %d alive after its parent died", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sweepStale()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dead binary's directory %s not swept (%v)", dir, err)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
