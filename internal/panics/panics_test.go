package panics

import (
	"errors"
	"strings"
	"testing"
)

func TestCatch(t *testing.T) {
	if err := Catch("ok", func() error { return nil }); err != nil {
		t.Fatalf("got %v; want nil", err)
	}
	want := errors.New("plain")
	if err := Catch("err", func() error { return want }); err != want {
		t.Fatalf("got %v; want %v", err, want)
	}
	err := Catch("nil map", func() error {
		var m map[int]int
		m[1] = 1
		return nil
	})
	var pe *Error
	if !errors.As(err, &pe) || pe.Site != "nil map" || !strings.Contains(string(pe.Stack), "TestCatch") {
		t.Fatalf("got %v; want an *Error naming the site with the stack", err)
	}
	var re interface{ RuntimeError() }
	if !errors.As(err, &re) {
		t.Fatalf("got %v; want the runtime error reachable through Unwrap", err)
	}
}

func TestArm(t *testing.T) {
	disarm := Arm("site", 2)
	defer disarm()
	for i := 0; i < 3; i++ {
		err := Catch("site", func() error { return nil })
		var pe *Error
		if got := errors.As(err, &pe); got != (i < 2) {
			t.Fatalf("call %d: %v; want a panic for the first two calls only", i, err)
		}
		if err := Catch("other", func() error { return nil }); err != nil {
			t.Fatalf("an unarmed site panicked: %v", err)
		}
	}
	disarm()
	if armed.Load() != 0 {
		t.Fatalf("armed = %d after disarm; want 0", armed.Load())
	}
}
