package frontend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/connector/pgcdc"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/streamplan"
)

// PostgreSQL CDC DDL (package pgcdc does the replication):
//
//	CREATE SOURCE pg WITH (connector = 'postgres-cdc', hostname, port, ...)
//	CREATE TABLE t (... PRIMARY KEY (...)) FROM pg TABLE 'public.t'
//	CREATE TABLE t (... PRIMARY KEY (...)) WITH (connector = 'postgres-cdc', ..., table.name = 't')
//
// A CDC source only holds connection options; each table reads its own
// replication slot (named by the table's slot.name option, pinned at
// CREATE), so DROP TABLE drops that table's slot and DROP SOURCE ...
// CASCADE drops every table's.

// cdcCheckTimeout bounds CREATE's round trips to the upstream.
const cdcCheckTimeout = 30 * time.Second

func isCDC(options map[string]string) bool {
	return strings.EqualFold(options["connector"], pgcdc.Connector)
}

// cdcTableOptions resolves a CDC table's options: the source's for
// CREATE TABLE ... FROM source TABLE '...', and a fresh slot name. It
// returns the source the table depends on (nil for the single-table form).
func (ss *session) cdcTableOptions(ct *binder.CreateTable) (map[string]string, *catalog.Relation, error) {
	opts := map[string]string{}
	var src *catalog.Relation
	if ct.FromSource != "" {
		schema, name, ok := strings.Cut(ct.FromSource, ".")
		if !ok {
			schema, name = "", ct.FromSource
		}
		rel, err := (&sessionCatalog{ss: ss}).ResolveRelation(schema, name)
		if err != nil || rel == nil || rel.Kind != catalog.KindSource {
			return nil, nil, sqlerr.Errorf(sqlerr.UndefinedObject, "source %q does not exist", ct.FromSource)
		}
		if !isCDC(rel.Options) {
			return nil, nil, sqlerr.Errorf(sqlerr.WrongObjectType, "source %q is not a postgres-cdc source: CREATE TABLE ... FROM source TABLE reads a CDC source", ct.FromSource)
		}
		for k, v := range rel.Options {
			opts[k] = v
		}
		opts[pgcdc.OptTable] = ct.FromTable
		src = rel
	}
	for k, v := range ct.Options {
		opts[k] = v
	}
	// Every table reads its own slot: a source's slot.name is the prefix
	// of its tables' slots.
	if slot := opts[pgcdc.OptSlot]; slot == "" || src != nil {
		prefix := slot
		if prefix == "" {
			prefix = "runnel"
		}
		var b [6]byte
		rand.Read(b[:])
		suffix := "_" + hex.EncodeToString(b[:])
		if len(prefix)+len(suffix) > 63 {
			prefix = prefix[:63-len(suffix)]
		}
		opts[pgcdc.OptSlot] = prefix + suffix
	}
	return opts, src, nil
}

// checkCDCTable checks, at CREATE TABLE, that the upstream can feed rel
// (and sets up its publication).
func (s *Frontend) checkCDCTable(ctx context.Context, rel *catalog.Relation) error {
	spec := streamplan.ExternalSpec(rel, s.log)
	cfg, err := pgcdc.ParseTableOptions(rel.Options)
	if err != nil {
		return err
	}
	cols := make([]pgcdc.Column, len(spec.Columns))
	for i, c := range spec.Columns {
		cols[i] = pgcdc.Column{Name: c.Name, Type: c.Type}
	}
	ctx, cancel := context.WithTimeout(ctx, cdcCheckTimeout)
	defer cancel()
	return pgcdc.Check(ctx, cfg, cols, spec.PK)
}

// checkCDCSource checks a CDC source's options and that the upstream
// answers, so that a typo fails CREATE SOURCE.
func checkCDCSource(ctx context.Context, options map[string]string) error {
	cfg, err := pgcdc.ParseSourceOptions(options)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cdcCheckTimeout)
	defer cancel()
	return pgcdc.Ping(ctx, cfg)
}
