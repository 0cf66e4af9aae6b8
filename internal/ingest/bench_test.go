package ingest_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestLineProtocolIngestBench measures line-protocol ingest over HTTP into
// a server in this process: TSBS's cpu-only shape (10 float fields, 10
// tags per host), RUNNEL_INGEST_BENCH rows in POSTs of 5,000 lines from
// RUNNEL_INGEST_CLIENTS clients (default 4), once into a default table
// (last write wins: one existence read per row) and once into an
// append_mode table (x-greptime-hints). Each POST is answered only once
// its rows are committed, so the figure includes the commits. Off by
// default; docs/benchmarks.md has the command and figures.
func TestLineProtocolIngestBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RUNNEL_INGEST_BENCH"))
	if n <= 0 {
		t.Skip("set RUNNEL_INGEST_BENCH=<rows> to run")
	}
	clients := 4
	if c, _ := strconv.Atoi(os.Getenv("RUNNEL_INGEST_CLIENTS")); c > 0 {
		clients = c
	}
	const batch = 5000
	const hosts = 1000
	e := start(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixNano()
	// Pre-render the bodies: the figure is the server's, not the
	// generator's.
	bodies := func(table string) [][]byte {
		rng := rand.New(rand.NewPCG(1, 2))
		var out [][]byte
		var b bytes.Buffer
		for i := range n {
			h := i % hosts
			fmt.Fprintf(&b, "%s,hostname=host_%d,region=eu-west-%d,datacenter=eu-west-%dc,rack=%d,os=Ubuntu16.04LTS,arch=x64,team=SF,service=%d,service_version=1,service_environment=production ",
				table, h, h%3, h%3, h%100, h%20)
			for f, name := range []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"} {
				if f > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%s=%.2f", name, rng.Float64()*100)
			}
			fmt.Fprintf(&b, " %d\n", base+int64(i/hosts)*int64(10*time.Second))
			if (i+1)%batch == 0 || i == n-1 {
				out = append(out, bytes.Clone(b.Bytes()))
				b.Reset()
			}
		}
		return out
	}
	run := func(table, hint string) float64 {
		bs := bodies(table)
		var next sync.Mutex
		idx := 0
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		cpu0 := cpuTime()
		start := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					next.Lock()
					i := idx
					idx++
					next.Unlock()
					if i >= len(bs) {
						return
					}
					req, _ := http.NewRequest("POST", e.http.URL+"/v1/influxdb/api/v2/write?precision=ns", bytes.NewReader(bs[i]))
					if hint != "" {
						req.Header.Set("x-greptime-hints", hint)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						errs <- err
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						errs <- fmt.Errorf("POST: %s", resp.Status)
						return
					}
				}
			}()
		}
		wg.Wait()
		took := time.Since(start)
		cpu := cpuTime() - cpu0
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		if got := e.query(t, "SELECT count(*) FROM "+table); got != fmt.Sprintf("[%d]", n) {
			t.Fatalf("%s holds %s rows; want %d", table, got, n)
		}
		rate := float64(n) / took.Seconds()
		t.Logf("%-28s %d rows (10 fields, 10 tags), %d clients x %d-line POSTs: %v, %.0f rows/s; process CPU %v: %.0f rows per CPU-second (GOMAXPROCS %d)",
			table+" ("+map[bool]string{true: "append_mode", false: "last write wins"}[hint != ""]+")",
			n, clients, batch, took.Round(time.Millisecond), rate, cpu.Round(time.Millisecond), float64(n)/cpu.Seconds(), runtime.GOMAXPROCS(0))
		return rate
	}
	run("cpu_dedup", "")
	run("cpu_append", "append_mode=true")
}

// cpuTime is the process's user+system CPU time (the test's client side
// included: the bodies are pre-rendered, so it is small).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
