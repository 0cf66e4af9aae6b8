package crashtest

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestRecoverUnderLoad forces recoveries (the RECOVER statement, from
// another session) while writers run with implicit_flush, without killing
// the process. A recovery discards the uncommitted epoch, so a statement
// whose rows were in it must fail; one that returned success must be
// there (I7). A statement that failed is treated as uncertain (wholly
// applied or wholly absent), as after a crash.
func TestRecoverUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: skipped with -short")
	}
	seed := envInt(t, "RUNNEL_CRASH_SEED", time.Now().UnixNano())
	rounds := int(envInt(t, "RUNNEL_RECOVER_ROUNDS", 6))
	t.Logf("seed %d, %d rounds", seed, rounds)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d", seed)
		}
	})
	r := newCrashRun(t, seed)
	p := r.start()
	p.waitReady(t, readyLimit)
	r.setup(p)

	for i := range rounds {
		d := 500*time.Millisecond + time.Duration(r.rng.Int63n(int64(1500*time.Millisecond)))
		acked, recovers, failed := r.loadWithRecovers(p, d)
		nAcct, nEv := r.verify(p)
		t.Logf("round %d: %v of load, %d RECOVERs, %d statements acknowledged, %d failed; verified (%d acct, %d ev rows)",
			i, d, recovers, acked, failed, nAcct, nEv)
		if t.Failed() {
			return
		}
	}
	if err := exitedCleanly(p.signal(syscall.SIGTERM)); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
}

// loadWithRecovers runs the writers for d while another session issues
// RECOVER at random intervals. A writer whose statement fails stops for
// the round with that statement pending, and its errors are expected.
func (r *crashRun) loadWithRecovers(p *proc, d time.Duration) (acked, recovers, failed int) {
	t := r.t
	var stop atomic.Bool
	var tolerate atomic.Bool
	tolerate.Store(true) // errors are expected while recovering
	before := 0
	for _, w := range r.writers {
		before += w.acked
	}
	var wg sync.WaitGroup
	for _, w := range r.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(t, p.url(), &stop, &tolerate)
		}()
	}
	gaps := make([]time.Duration, 0, 16)
	for range 16 {
		gaps = append(gaps, 50*time.Millisecond+time.Duration(r.rng.Int63n(int64(250*time.Millisecond))))
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.url())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		time.Sleep(gaps[i%len(gaps)])
		rctx, cancel := context.WithTimeout(ctx, statementLimit)
		_, err := conn.Exec(rctx, "RECOVER")
		cancel()
		if err != nil {
			t.Errorf("RECOVER: %v", err)
			break
		}
		recovers++
	}
	conn.Close(ctx)
	stop.Store(true)
	wg.Wait()
	for _, w := range r.writers {
		acked += w.acked
		if w.pending != nil {
			failed++
		}
	}
	return acked - before, recovers, failed
}
