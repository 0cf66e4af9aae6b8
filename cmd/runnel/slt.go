package main

import (
	"io"

	"github.com/runneldb/runnel/internal/slt"
)

// sltMain runs sqllogictest files against a server.
func sltMain(args []string, stdout, stderr io.Writer) int {
	return slt.Main(args, stdout, stderr)
}
