//go:build tools

// Package deps pins modules that Runnel uses before every importer exists,
// so that `go mod tidy` keeps them. It is never built.
package deps

import (
	_ "github.com/cockroachdb/apd/v3"
	_ "github.com/cockroachdb/pebble/v2/sstable"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgproto3"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/minio/minio-go/v7"
	_ "github.com/pganalyze/pg_query_go/v6"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "go.uber.org/goleak"
	_ "golang.org/x/sync/errgroup"
	_ "modernc.org/sqlite"
)
