package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchIVMRejectsBadFlags: a bad --log-level or --rows value is a
// usage error (exit 2) naming the flag, before anything is started.
func TestBenchIVMRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--rows", "many"}, "rows"},
	} {
		var out, errOut bytes.Buffer
		if code := benchIVM(c.args, &out, &errOut); code != 2 {
			t.Errorf("bench ivm %v: exit %d, want 2 (stderr %q)", c.args, code, errOut.String())
		}
		if !strings.Contains(errOut.String(), c.want) {
			t.Errorf("bench ivm %v: stderr %q does not name %s", c.args, errOut.String(), c.want)
		}
	}
}
