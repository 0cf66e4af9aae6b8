package frontend

import (
	"testing"
)

func TestSizePretty(t *testing.T) {
	// Boundaries from PostgreSQL's regression test of pg_size_pretty.
	cases := map[int64]string{
		10239: "10239 bytes", 10240: "10 kB", 10485247: "10239 kB", 10485248: "10 MB",
		10736893951: "10239 MB", 10736893952: "10 GB", 10994579406847: "10239 GB",
		10994579406848: "10 TB", 11258449312612351: "10239 TB", 11258449312612352: "10 PB",
		1000000: "977 kB", 1000000000000000: "909 TB", 0: "0 bytes",
	}
	for n, want := range cases {
		if got := sizePretty(n); got != want {
			t.Errorf("sizePretty(%d) = %q, want %q", n, got, want)
		}
		if n != 0 {
			if got := sizePretty(-n); got != "-"+want {
				t.Errorf("sizePretty(%d) = %q, want %q", -n, got, "-"+want)
			}
		}
	}
}
