package frontend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
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
	cols, err := pgcdc.SpecColumns(spec)
	if err != nil {
		return err
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

// starColumns fills CREATE TABLE t (*) FROM source TABLE '...' (or the
// single-table form): the upstream table's columns, typed as
// PostgreSQL's format_type names them, come first, and its primary key
// (replica identity) becomes the table's unless the statement names one.
func starColumns(ctx context.Context, ct *binder.CreateTable, opts map[string]string) error {
	if !isCDC(opts) {
		return sqlerr.Errorf(sqlerr.FeatureNotSupported, "CREATE TABLE %s (*): the columns come from the upstream table, which only a postgres-cdc table has; list the columns", ct.Name)
	}
	if ct.Watermark != nil {
		return sqlerr.Errorf(sqlerr.FeatureNotSupported, "CREATE TABLE %s (*): a WATERMARK needs the columns listed", ct.Name)
	}
	cfg, err := pgcdc.ParseTableOptions(opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cdcCheckTimeout)
	defer cancel()
	up, err := pgcdc.DescribeUpstream(ctx, cfg)
	if err != nil {
		return err
	}
	cols := make([]binder.ColumnDef, 0, len(up.Columns)+len(ct.Columns))
	for i, name := range up.Columns {
		t, err := binder.ResolveTypeText(up.Types[i])
		if err != nil {
			return sqlerr.Errorf(sqlerr.FeatureNotSupported, "CREATE TABLE %s (*): column %q of upstream table %s has type %s, which Runnel does not support; list the columns with a type Runnel has", ct.Name, name, cfg.TableName(), up.Types[i])
		}
		cols = append(cols, binder.ColumnDef{Name: name, Type: t})
	}
	n := len(cols)
	for i := range ct.PK {
		ct.PK[i] += n
	}
	ct.Columns = append(cols, ct.Columns...)
	if len(ct.PK) == 0 {
		if up.Identity != "d" && up.Identity != "i" || len(up.Key) == 0 {
			return sqlerr.Errorf(sqlerr.InvalidTableDefinition, "CREATE TABLE %s (*): upstream table %s has no primary key; list the columns and name a PRIMARY KEY", ct.Name, cfg.TableName())
		}
		for _, k := range up.Key {
			ct.PK = append(ct.PK, slices.Index(up.Columns, k))
		}
	}
	for _, k := range ct.PK {
		ct.Columns[k].NotNull = true
	}
	return nil
}
