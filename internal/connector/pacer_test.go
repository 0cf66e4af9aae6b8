package connector

import (
	"testing"
	"time"
)

func TestPacer(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	p := NewPacer(GapForRate(10), t0) // one row per 100 ms
	if got := p.Budget(t0, 1000); got != 1 {
		t.Fatalf("budget at start = %d; want 1", got)
	}
	p.Emitted(1)
	if got, w := p.Budget(t0.Add(50*time.Millisecond), 1000), p.Wait(t0.Add(50*time.Millisecond)); got != 0 || w != 50*time.Millisecond {
		t.Fatalf("at 50ms: budget %d wait %v; want 0, 50ms", got, w)
	}
	if got := p.Budget(t0.Add(time.Second), 1000); got != 10 {
		t.Fatalf("budget at 1s = %d; want 10", got)
	}
	if got := p.Budget(t0.Add(time.Second), 4); got != 4 {
		t.Fatalf("budget capped = %d; want 4", got)
	}
	p.Emitted(10)
	if got := p.Budget(t0.Add(time.Second), 1000); got != 0 {
		t.Fatalf("budget after catching up = %d; want 0", got)
	}
	u := NewPacer(0, t0)
	if u.Budget(t0, 77) != 77 || u.Wait(t0) != 0 || GapForRate(0) != 0 {
		t.Fatal("unthrottled pacer throttles")
	}
}
