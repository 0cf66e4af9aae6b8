// Command runnel is the Runnel streaming database: one binary for the
// server and its operator tools.
//
//	runnel                         serve with the embedded defaults
//	runnel serve [flags]           serve (pgwire on 127.0.0.1:4566)
//	runnel ctl storage check|gc|version --data-dir DIR
//	runnel slt --url URL FILE...   run sqllogictest files against a server
//	runnel bench nexmark ...       Nexmark throughput against an embedded server
//	runnel bench views ...         view maintenance rows/s and peak RSS (10 M rows)
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (len(args[0]) > 0 && args[0][0] == '-') {
		return serveMain(args, stdout, stderr)
	}
	switch args[0] {
	case "serve":
		return serveMain(args[1:], stdout, stderr)
	case "ctl":
		return ctlMain(args[1:], stdout, stderr)
	case "slt":
		return sltMain(args[1:], stdout, stderr)
	case "bench":
		if len(args) > 1 && args[1] == "views" {
			return benchViewsMain(args[2:], stdout, stderr)
		}
		return benchMain(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "runnel: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  runnel [serve] [--listen HOST:PORT] [--data-dir DIR] [--object-store URL] [--meta-store URL]
  runnel ctl storage check|gc|version --data-dir DIR [--grace DURATION]
  runnel slt --url postgres://root@127.0.0.1:4566/dev FILE...
  runnel bench nexmark [--queries q0,q1,...] [--events N] [--json]
  runnel bench views [--scenarios table,agg,join] [--rows N] [--json]
`)
}
