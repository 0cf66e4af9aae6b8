package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/objstore"
)

var ctx = context.Background()

func exists(t *testing.T, s objstore.Store, key string) bool {
	t.Helper()
	_, err := s.Stat(ctx, key)
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Stat %s: %v", key, err)
	}
	return err == nil
}

func TestFaultScriptedRule(t *testing.T) {
	f := objstore.NewFault(objstore.NewMem(), 1)
	f.AddRule(objstore.FaultRule{Ops: []objstore.Op{objstore.OpPut}, Key: regexp.MustCompile(`^sst/`), Skip: 1, Times: 2})
	var got []string
	for i := 0; i < 4; i++ {
		key := fmt.Sprintf("sst/%d", i)
		err := f.Put(ctx, key, []byte("x"))
		switch {
		case err == nil:
			got = append(got, "ok")
		case errors.Is(err, objstore.ErrInjected) && strings.Contains(err.Error(), key):
			got = append(got, "fail")
		default:
			t.Fatalf("Put %s: unexpected error %v", key, err)
		}
		if (err == nil) != exists(t, f.Inner(), key) {
			t.Fatalf("Put %s returned %v but landed=%v", key, err, exists(t, f.Inner(), key))
		}
	}
	if s := strings.Join(got, " "); s != "ok fail fail ok" {
		t.Fatalf("outcomes = %s; want ok fail fail ok", s)
	}
	// Other keys and other ops are untouched by the rule.
	if err := f.Put(ctx, "meta/x", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(ctx, "sst/0"); err != nil {
		t.Fatal(err)
	}
	var injected int
	for _, c := range f.Calls() {
		if c.Injected {
			injected++
		}
	}
	calls := f.Calls()
	if len(calls) != 6 || injected != 2 || calls[1].Landed || !calls[3].Landed || calls[1].Seq != 2 {
		t.Fatalf("call log = %+v; want 6 calls, 2 injected, the failed ones not landed", calls)
	}
}

func TestFaultAmbiguousPutLands(t *testing.T) {
	f := objstore.NewFault(objstore.NewMem(), 1)
	boom := errors.New("connection reset")
	f.AddRule(objstore.FaultRule{Ops: []objstore.Op{objstore.OpPut}, Ambiguous: true, Err: boom, Times: 1})
	err := f.Put(ctx, "sst/9", []byte("payload"))
	if !errors.Is(err, boom) {
		t.Fatalf("ambiguous Put = %v; want the injected error", err)
	}
	got, gerr := f.Get(ctx, "sst/9")
	if gerr != nil || string(got) != "payload" {
		t.Fatalf("after an ambiguous Put the object must have landed: %q, %v", got, gerr)
	}
	if c := f.Calls()[0]; !c.Landed || !c.Injected {
		t.Fatalf("call log entry %+v; want landed and injected", c)
	}
}

func TestFaultCrashRule(t *testing.T) {
	for _, ambiguous := range []bool{false, true} {
		t.Run(fmt.Sprintf("ambiguous=%v", ambiguous), func(t *testing.T) {
			f := objstore.NewFault(objstore.NewMem(), 1)
			if err := f.Put(ctx, "before", []byte("1")); err != nil {
				t.Fatal(err)
			}
			f.AddRule(objstore.FaultRule{Ops: []objstore.Op{objstore.OpPut}, Key: regexp.MustCompile(`^crash-here$`), Crash: true, Ambiguous: ambiguous})
			if err := f.Put(ctx, "crash-here", []byte("2")); !errors.Is(err, objstore.ErrCrashed) {
				t.Fatalf("Put = %v; want ErrCrashed", err)
			}
			if !f.Crashed() {
				t.Fatal("store not crashed after a Crash rule fired")
			}
			// Every op fails until Reset, reads included.
			if _, err := f.Get(ctx, "before"); !errors.Is(err, objstore.ErrCrashed) {
				t.Fatalf("Get while crashed = %v; want ErrCrashed", err)
			}
			if _, err := f.List(ctx, ""); !errors.Is(err, objstore.ErrCrashed) {
				t.Fatalf("List while crashed = %v; want ErrCrashed", err)
			}
			if err := f.Delete(ctx, "before"); !errors.Is(err, objstore.ErrCrashed) {
				t.Fatalf("Delete while crashed = %v; want ErrCrashed", err)
			}
			f.Reset()
			f.ClearRules()
			if !exists(t, f, "before") {
				t.Fatal("object written before the crash is gone")
			}
			if exists(t, f, "crash-here") != ambiguous {
				t.Fatalf("crashed Put landed=%v; want %v", !ambiguous, ambiguous)
			}
		})
	}
}

func TestFaultCrashSwitchAndInFlightCall(t *testing.T) {
	f := objstore.NewFault(objstore.NewMem(), 1)
	entered, release := make(chan struct{}), make(chan struct{})
	f.SetHook(func(op objstore.Op, key string) error {
		if key == "in-flight" {
			close(entered)
			<-release
		}
		return nil
	})
	done := make(chan error)
	go func() { done <- f.Put(ctx, "in-flight", []byte("x")) }()
	<-entered
	f.Crash() // the node dies while the Put is in progress
	close(release)
	err := <-done
	if !errors.Is(err, objstore.ErrCrashed) {
		t.Fatalf("in-flight Put = %v; want ErrCrashed", err)
	}
	f.SetHook(nil)
	f.Reset()
	// The Put had passed its crash check, so it reached the store: the
	// caller got an error for an object that exists (ambiguous, I2).
	if !exists(t, f, "in-flight") {
		t.Fatal("in-flight Put did not land; the test no longer exercises an ambiguous crash")
	}
	calls := f.Calls()
	if c := calls[0]; !c.Landed || !errors.Is(c.Err, objstore.ErrCrashed) {
		t.Fatalf("log entry %+v; want landed with ErrCrashed", c)
	}
}

func TestFaultHookFailsCall(t *testing.T) {
	f := objstore.NewFault(objstore.NewMem(), 1)
	stop := errors.New("stop at upload")
	f.SetHook(func(op objstore.Op, key string) error {
		if op == objstore.OpPut && strings.HasPrefix(key, "sst/") {
			return stop
		}
		return nil
	})
	if err := f.Put(ctx, "sst/1", nil); !errors.Is(err, stop) {
		t.Fatalf("Put = %v; want the hook's error", err)
	}
	if err := f.Put(ctx, "other", nil); err != nil {
		t.Fatal(err)
	}
	if exists(t, f.Inner(), "sst/1") {
		t.Fatal("a call failed by the hook reached the store")
	}
}

// failurePattern runs n Gets through a store with one probabilistic rule.
func failurePattern(seed uint64, n int) string {
	m := objstore.NewMem()
	m.Put(ctx, "k", nil)
	f := objstore.NewFault(m, seed)
	f.AddRule(objstore.FaultRule{Ops: []objstore.Op{objstore.OpGet}, Prob: 0.3})
	var b strings.Builder
	for i := 0; i < n; i++ {
		if _, err := f.Get(ctx, "k"); err != nil {
			b.WriteByte('x')
		} else {
			b.WriteByte('.')
		}
	}
	return b.String()
}

func TestFaultSeededProbability(t *testing.T) {
	a, b := failurePattern(42, 1000), failurePattern(42, 1000)
	if a != b {
		t.Fatal("the same seed gave different failure patterns")
	}
	if n := strings.Count(a, "x"); n < 240 || n > 360 {
		t.Fatalf("%d of 1000 calls failed with Prob 0.3; want about 300", n)
	}
	if failurePattern(43, 1000) == a {
		t.Fatal("different seeds gave the same failure pattern")
	}
}

func TestFaultLatencyUsesSleeper(t *testing.T) {
	f := objstore.NewFault(objstore.NewMem(), 1)
	var mu sync.Mutex
	var slept []time.Duration
	f.SetSleeper(func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		slept = append(slept, d)
		return ctx.Err()
	})
	f.AddRule(objstore.FaultRule{Ops: []objstore.Op{objstore.OpPut}, Latency: 3 * time.Second})
	f.AddRule(objstore.FaultRule{Ops: []objstore.Op{objstore.OpPut}, Key: regexp.MustCompile(`slow`), Latency: 2 * time.Second})
	start := time.Now()
	if err := f.Put(ctx, "slow", []byte("x")); err != nil {
		t.Fatalf("latency-only rules must let the call through: %v", err)
	}
	if err := f.Put(ctx, "fast", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("injected latency used the real clock")
	}
	if fmt.Sprint(slept) != "[5s 3s]" {
		t.Fatalf("slept %v; want [5s 3s]", slept)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := f.Put(cctx, "cancelled", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with cancelled context during latency = %v; want context.Canceled", err)
	}
	if exists(t, f.Inner(), "cancelled") {
		t.Fatal("a Put cancelled during injected latency landed")
	}
}
