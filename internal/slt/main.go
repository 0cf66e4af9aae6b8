package slt

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"
)

// DefaultURL is Runnel's default listen address, database and user.
const DefaultURL = "postgres://root@127.0.0.1:4566/dev?sslmode=disable"

type labelList []string

func (l *labelList) String() string     { return strings.Join(*l, ",") }
func (l *labelList) Set(v string) error { *l = append(*l, v); return nil }

// Main is the `runnel slt` command: it parses args (without the command
// name), runs the files, prints failures and the closing "N passed, M
// failed" line to stdout, and returns the exit code: 0 all passed, 1 some
// failed, 2 usage error.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("slt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", DefaultURL, "postgres:// URL of the server to test")
	var labels labelList
	fs.Var(&labels, "label", "label in force for skipif/onlyif (repeatable; default runnel)")
	timeout := fs.Duration("timeout", 5*time.Minute, "limit for each attempt of a record (0: none)")
	failFast := fs.Bool("fail-fast", false, "stop at the first failure")
	strict := fs.Bool("strict-types", false, "fail queries whose type string has the wrong number of columns")
	verbose := fs.Bool("v", false, "print each file as it starts and each failure as it happens")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: runnel slt [flags] FILE|GLOB...\n\nRuns sqllogictest files (sqllogictest-rs / RisingWave dialect) against a server.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	var files []string
	for _, a := range fs.Args() {
		if strings.ContainsAny(a, "*?[") {
			m, err := filepath.Glob(a)
			if err != nil {
				fmt.Fprintf(stderr, "slt: bad pattern %q: %v\n", a, err)
				return 2
			}
			if len(m) == 0 {
				fmt.Fprintf(stderr, "slt: no file matches %q\n", a)
				return 2
			}
			files = append(files, m...)
			continue
		}
		files = append(files, a)
	}
	opts := Options{Labels: labels, RecordTimeout: *timeout, FailFast: *failFast, StrictTypes: *strict}
	if *verbose {
		opts.Log = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := RunFiles(ctx, *url, files, opts)
	for _, f := range res.Failures {
		// Continuation lines of a message are indented under its file:line.
		fmt.Fprintln(stdout, strings.ReplaceAll(f.String(), "\n", "\n  "))
		if f.SQL != "" {
			fmt.Fprintf(stdout, "  SQL: %s\n", strings.ReplaceAll(f.SQL, "\n", "\n       "))
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "slt: %v\n", err)
	}
	fmt.Fprintln(stdout, res.Summary())
	if err != nil || res.Failed > 0 {
		return 1
	}
	return 0
}
