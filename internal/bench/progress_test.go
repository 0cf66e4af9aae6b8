package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestProgressPlain(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false, "load x", "rows", 100)
	p.update(50) // within lineEvery of the start: no line yet
	p.update(100)
	p.finish(100)
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "load x: 100/100 rows (100%)") {
		t.Fatalf("plain progress printed %q; want one final line", got)
	}
}

func TestProgressTerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true, "q0", "events", 10)
	p.finish(5)
	got := b.String()
	if !strings.HasPrefix(got, "\r\033[Kq0 [###############...............] 5/10 events (50%)") || !strings.HasSuffix(got, "\n") {
		t.Fatalf("terminal progress drew %q", got)
	}
	b.Reset()
	p = newProgress(&b, true, "q0", "events", 10)
	p.draw(3, p.start)
	p.clear()
	if got := b.String(); !strings.HasSuffix(got, "\r\033[K") {
		t.Fatalf("clear left %q; want the line erased", got)
	}
}

func TestNexmarkPostgresSQLRewrite(t *testing.T) {
	got, err := NexmarkPostgresSQL(`SELECT window_start FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "TUMBLE") || !strings.Contains(got, "date_bin(INTERVAL '10 seconds', x.date_time, TIMESTAMP '1970-01-01') AS window_start") ||
		!strings.HasSuffix(got, "FROM bid x) AS bid") {
		t.Errorf("TUMBLE rewrite: %s", got)
	}
	got, err = NexmarkPostgresSQL(`SELECT 1 FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "HOP(") || !strings.Contains(got, "generate_series(0, 4)") || !strings.HasSuffix(got, "AS bid") {
		t.Errorf("HOP rewrite: %s", got)
	}
	if _, err := NexmarkPostgresSQL(`SELECT 1 FROM HOP(bid, date_time, INTERVAL '3' SECOND, INTERVAL '10' SECOND)`); err == nil {
		t.Error("HOP with a size that is not a multiple of the slide: want an error")
	}
}

// TestRunNexmarkProgress runs one small query with progress on: the
// watcher polls the running view's sources while they emit, and the
// report line must follow.
func TestRunNexmarkProgress(t *testing.T) {
	var out, prog bytes.Buffer
	res, err := RunNexmark(context.Background(), NexmarkOptions{Queries: []string{"q2"}, Events: 20_000, Out: &out, Progress: &prog})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Error != "" || res[0].EventsPerSec <= 0 {
		t.Fatalf("results %+v", res)
	}
	if !strings.HasPrefix(out.String(), "q2    20000 events in ") {
		t.Errorf("report %q", out.String())
	}
}
