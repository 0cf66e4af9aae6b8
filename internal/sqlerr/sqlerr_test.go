package sqlerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestWrapAndFrom(t *testing.T) {
	base := errors.New("disk on fire")
	e := Wrap(base, InternalError, "could not read table 5")
	wrapped := fmt.Errorf("scan: %w", e)
	if got := Code(wrapped); got != InternalError {
		t.Fatalf("Code = %q; want %q", got, InternalError)
	}
	if !errors.Is(wrapped, base) {
		t.Fatalf("errors.Is lost the cause")
	}
	if From(wrapped).Message != "could not read table 5" {
		t.Fatalf("From lost the message: %q", From(wrapped).Message)
	}
	if Code(errors.New("x")) != InternalError || Code(nil) != "" {
		t.Fatalf("Code of plain/nil errors wrong")
	}
	if Wrap(nil, SyntaxError, "x") != nil {
		t.Fatalf("Wrap(nil) should be nil")
	}
}

func TestErrorfAndWith(t *testing.T) {
	e := Errorf(NumericValueOutOfRange, "value %q is out of range for type %s", "9999999999", "integer")
	if e.Error() != `value "9999999999" is out of range for type integer` {
		t.Fatalf("got %q", e.Error())
	}
	d := e.WithDetail("d %d", 1).WithHint("h").WithPosition(7)
	if d.Detail != "d 1" || d.Hint != "h" || d.Position != 7 || e.Detail != "" {
		t.Fatalf("With* wrong: %+v (orig %+v)", d, e)
	}
	if !Is(d, NumericValueOutOfRange) {
		t.Fatalf("Is failed")
	}
}
