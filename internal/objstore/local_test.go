package objstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("OBJSTORE_CRASH_HELPER"); dir != "" {
		crashHelper(dir)
		return
	}
	os.Exit(m.Run())
}

var errCrash = errors.New("simulated crash")

func tempFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestLocalCrashMidPutLeavesNoPartialObject stops a Put at each point inside
// it, as a crash would, and checks what readers see then and after a
// restart: before the rename nothing, after it the whole object.
func TestLocalCrashMidPutLeavesNoPartialObject(t *testing.T) {
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789"), 100_000)
	for _, c := range []struct {
		point   string
		visible bool
	}{
		{"temp-written", false},
		{"before-rename", false},
		{"after-rename", true},
	} {
		for _, overwrite := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/overwrite=%v", c.point, overwrite), func(t *testing.T) {
				dir := t.TempDir()
				l, err := NewLocal(dir)
				if err != nil {
					t.Fatal(err)
				}
				old := []byte("old version")
				if overwrite {
					if err := l.Put(ctx, "sst/1.sst", old); err != nil {
						t.Fatal(err)
					}
				}
				checkReader := func(when string, s *Local) {
					t.Helper()
					got, err := s.Get(ctx, "sst/1.sst")
					infos, lerr := s.List(ctx, "")
					if lerr != nil {
						t.Fatalf("%s: List: %v", when, lerr)
					}
					switch {
					case c.visible:
						if err != nil || !bytes.Equal(got, data) {
							t.Fatalf("%s: Get = %d bytes, %v; want the whole new object", when, len(got), err)
						}
					case overwrite:
						if err != nil || !bytes.Equal(got, old) {
							t.Fatalf("%s: Get = %q, %v; want the old object intact", when, got, err)
						}
					default:
						if !errors.Is(err, ErrNotFound) {
							t.Fatalf("%s: Get = %d bytes, %v; want ErrNotFound", when, len(got), err)
						}
						if len(infos) != 0 {
							t.Fatalf("%s: List shows %v; want nothing", when, infos)
						}
					}
					for _, i := range infos {
						if strings.Contains(i.Key, tempPrefix) {
							t.Fatalf("%s: List shows temp file %s", when, i.Key)
						}
					}
				}
				l.testHook = func(point, key string) error {
					if point != c.point {
						return nil
					}
					// The Put is paused here: what does a reader see?
					checkReader("during Put", l)
					return errCrash
				}
				if err := l.Put(ctx, "sst/1.sst", data); !errors.Is(err, errCrash) {
					t.Fatalf("Put = %v; want the simulated crash", err)
				}
				// "Restart": a fresh store on the same directory.
				l2, err := NewLocal(dir)
				if err != nil {
					t.Fatal(err)
				}
				checkReader("after restart", l2)
				if !c.visible && len(tempFiles(t, dir)) != 1 {
					t.Fatalf("want the crashed Put's temp file left behind, found %v", tempFiles(t, dir))
				}
				n, err := l2.RemoveTempFiles(ctx)
				if err != nil || len(tempFiles(t, dir)) != 0 {
					t.Fatalf("RemoveTempFiles = %d, %v; left %v", n, err, tempFiles(t, dir))
				}
				checkReader("after temp cleanup", l2)
			})
		}
	}
}

// crashHelper writes objects whose content is a function of their key until
// it is killed.
func crashHelper(dir string) {
	l, err := NewLocal(dir)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	base, _ := os.ReadDir(filepath.Join(dir, "obj"))
	for i := len(base); ; i++ {
		key := fmt.Sprintf("obj/%06d", i)
		if err := l.Put(context.Background(), key, crashContent(key)); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		fmt.Println("put") // progress for the parent, which kills us mid-Put
	}
}

func crashContent(key string) []byte {
	n := 64<<10 + len(key)*1000 + int(key[len(key)-1])*7919 // 64–700 KiB, differs per key
	return bytes.Repeat([]byte(key+"|"), n/(len(key)+1))
}

// TestLocalKillDuringPutsLeavesOnlyWholeObjects SIGKILLs a process that is
// writing objects, at a seeded random moment, several times, and checks
// that every object the store shows is complete.
func TestLocalKillDuringPutsLeavesOnlyWholeObjects(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	for round := 0; round < 8; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "OBJSTORE_CRASH_HELPER="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let a few Puts complete (so the test always has objects to
		// check, however slow the machine), then kill at a random moment
		// inside a later one.
		sc := bufio.NewScanner(out)
		for want := 1 + rng.IntN(3); want > 0; want-- {
			if !sc.Scan() {
				cmd.Wait()
				t.Fatalf("helper ended early (seed %d)", seed)
			}
			if sc.Text() != "put" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("helper failed (seed %d): %s", seed, sc.Text())
			}
		}
		time.Sleep(time.Duration(rng.IntN(5_000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := l.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) == 0 {
		t.Fatalf("no object was written before the kills (seed %d); the test proves nothing", seed)
	}
	for _, info := range infos {
		got, err := l.Get(context.Background(), info.Key)
		if err != nil {
			t.Fatalf("Get %s: %v (seed %d)", info.Key, err, seed)
		}
		if !bytes.Equal(got, crashContent(info.Key)) {
			t.Fatalf("object %s is torn: %d bytes, want %d (seed %d)", info.Key, len(got), len(crashContent(info.Key)), seed)
		}
	}
	t.Logf("%d whole objects, %d temp files left by kills", len(infos), len(tempFiles(t, dir)))
}

func TestLocalKeysStayInsideRoot(t *testing.T) {
	parent := t.TempDir()
	l, err := NewLocal(filepath.Join(parent, "root"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(parent, "secret"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, "../secret"); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Get ../secret = %v; want ErrInvalidKey", err)
	}
	if err := l.Delete(ctx, "../secret"); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Delete ../secret = %v; want ErrInvalidKey", err)
	}
	if _, err := l.List(ctx, "../"); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("List ../ = %v; want ErrInvalidKey", err)
	}
	if _, err := os.Stat(filepath.Join(parent, "secret")); err != nil {
		t.Fatal("file outside the root was touched")
	}
}

// TestLocalNoSpaceNamesKey fills a tiny tmpfs and checks that ENOSPC comes
// back wrapped, naming the key, with no partial object and no temp file.
func TestLocalNoSpaceNamesKey(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	l, err := NewLocal(mnt)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = l.Put(ctx, "sst/too-big.sst", make([]byte, 1<<20))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "sst/too-big.sst") {
		t.Fatalf("Put on a full disk = %v; want ENOSPC naming the key", err)
	}
	if _, err := l.Stat(ctx, "sst/too-big.sst"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("partial object visible after ENOSPC: %v", err)
	}
	if tf := tempFiles(t, mnt); len(tf) != 0 {
		t.Fatalf("temp files left after a failed Put: %v", tf)
	}
	if err := l.Put(ctx, "sst/small.sst", []byte("fits")); err != nil {
		t.Fatalf("Put after ENOSPC cleanup: %v", err)
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"a", "sst/000001.sst", "a.b/c-d_e", "x/.hidden", "tmp-x", "a/.tmp"} {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v; want nil", k, err)
		}
	}
	for _, k := range []string{"", "/a", "a/", "a//b", ".", "..", "a/..", "./a", "a\\b", "a\x00b", ".tmp-1", "a/.tmp-b/c"} {
		if err := ValidateKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v; want ErrInvalidKey", k, err)
		}
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, u := range []string{dir, "file://" + dir} {
		s, err := Open(ctx, u)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if l, ok := s.(*Local); !ok || l.Root() != dir {
			t.Fatalf("Open(%q) = %T %+v; want Local at %s", u, s, s, dir)
		}
	}
	t.Chdir(dir)
	s, err := Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := s.(*Local); !ok || l.Root() != dir {
		t.Fatalf(`Open("") = %T; want Local at the working directory %s`, s, dir)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "ak")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "sk")
	t.Setenv("AWS_REGION", "")
	s, err = Open(ctx, "s3://bkt/some/prefix?endpoint=127.0.0.1:9000&region=eu-1&secure=false")
	if err != nil {
		t.Fatal(err)
	}
	got := s.(*S3).Config()
	want := S3Config{Endpoint: "127.0.0.1:9000", Bucket: "bkt", Prefix: "some/prefix/", Region: "eu-1", AccessKey: "ak", SecretKey: "sk"}
	if got != want {
		t.Fatalf("S3 config = %+v; want %+v", got, want)
	}
	cfg, err := ParseS3URL("s3://bkt")
	if err != nil || !cfg.Secure || cfg.Prefix != "" {
		t.Fatalf("ParseS3URL(s3://bkt) = %+v, %v; want secure, no prefix", cfg, err)
	}
	for _, bad := range []string{
		"s3://",                   // no bucket
		"s3://bkt/p?endpont=x",    // typo in a parameter
		"s3://bkt/p?secure=maybe", // not a bool
		"s3://user:pass@bkt/p",    // credentials in the URL
		"s3://bkt/../p",           // invalid prefix
		"gs://bkt/p",              // unsupported scheme
		"file://otherhost/path",   // remote file URL
	} {
		if _, err := Open(ctx, bad); err == nil {
			t.Errorf("Open(%q) succeeded; want an error", bad)
		}
	}
}

// Issue 13 item 8: reads and listings of the local store honour their
// context, so a caller that gives up (a recovery stopping actors) is not
// held by them: a cancelled context fails Get, GetRange and List with
// context.Canceled, and a large Get checks between 1 MiB chunks (the hook
// cancels after the first chunk's check).
func TestLocalReadsHonourCancellation(t *testing.T) {
	l, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	big := make([]byte, 3*readChunk+17)
	for i := range big {
		big[i] = byte(i)
	}
	if err := l.Put(bg, "a/big", big); err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(bg, "a/big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	part, err := l.GetRange(bg, "a/big", readChunk-3, readChunk+10)
	if err != nil || !bytes.Equal(part, big[readChunk-3:2*readChunk+7]) {
		t.Fatalf("GetRange: %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := l.Get(ctx, "a/big"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v", err)
	}
	if _, err := l.GetRange(ctx, "a/big", 0, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("GetRange with a cancelled context: %v", err)
	}
	if _, err := l.List(ctx, "a/"); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context: %v", err)
	}
	// Cancelled mid-read: a context whose Err turns non-nil after the
	// first check stops the read before the object's end.
	cc := &countingCtx{Context: bg, after: 2}
	if _, err := l.Get(cc, "a/big"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get cancelled mid-read: %v", err)
	}
	if cc.calls > 3 {
		t.Errorf("Get checked its context %d times after it was cancelled", cc.calls-2)
	}
}

// countingCtx reports Canceled from its after-th Err call on.
type countingCtx struct {
	context.Context
	after, calls int
}

func (c *countingCtx) Err() error {
	c.calls++
	if c.calls > c.after {
		return context.Canceled
	}
	return nil
}
