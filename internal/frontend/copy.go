package frontend

import (
	"context"
	"fmt"

	"github.com/runneldb/runnel/internal/batch"
	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sql"
	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/types"
)

// copy runs COPY ... FROM STDIN and COPY ... TO STDOUT.
func (st *statement) copy(ctx context.Context, b *binder.Copy, params []types.Datum) (pgwire.Result, error) {
	if b.Filename != "" {
		return pgwire.Result{}, sqlerr.New(sqlerr.InsufficientPrivilege, "COPY to or from a file is not supported; use COPY ... FROM STDIN / TO STDOUT (psql's \\copy)")
	}
	opts, err := copyOptions(b)
	if err != nil {
		return pgwire.Result{}, err
	}
	if b.From {
		cols := make([]pgwire.Column, len(b.Columns))
		for i, c := range b.Columns {
			cols[i] = pgwire.Column{Name: b.Table.Columns[c].Name, Type: b.Table.Columns[c].Type}
		}
		sink := &copySink{st: st, rel: b.Table, cols: b.Columns, identity: len(b.Columns) == len(b.Table.Columns)}
		for i, c := range b.Columns {
			sink.identity = sink.identity && c == i
		}
		if enc := bulkEncoder(b.Table); enc != nil {
			sink.bulk = exec.NewBatchEncoder(enc)
		}
		return pgwire.Result{Copy: &pgwire.Copy{In: true, Options: opts, Columns: cols, Sink: sink}}, nil
	}
	src, release, err := st.readSource(ctx, false)
	if err != nil {
		return pgwire.Result{}, err
	}
	env := &batch.Env{Data: src, Eval: st.evalContext(ctx), Params: params, MemoryLimit: st.sess.queryMemoryLimit()}
	it, err := batch.Run(ctx, env, b.Query)
	if err != nil {
		release()
		return pgwire.Result{}, mapStorageErr(err)
	}
	var cols []pgwire.Column
	for _, c := range b.Query.Schema() {
		if !c.Hidden {
			cols = append(cols, pgwire.Column{Name: c.Name, Type: c.Type})
		}
	}
	return pgwire.Result{Columns: cols, Copy: &pgwire.Copy{Options: opts, Columns: cols}, Rows: &queryRows{it: sql.HideColumns(it, b.Query.Schema()), release: release}}, nil
}

func copyOptions(b *binder.Copy) (pgwire.CopyOptions, error) {
	var o pgwire.CopyOptions
	switch b.Format {
	case "", "text":
		o = pgwire.DefaultCopyOptions(pgwire.CopyText)
	case "csv":
		o = pgwire.DefaultCopyOptions(pgwire.CopyCSV)
	case "binary":
		if b.Header || b.Delimiter != "\t" || b.Null != `\N` {
			return o, sqlerr.New(sqlerr.SyntaxError, "cannot specify DELIMITER, NULL or HEADER in BINARY mode")
		}
		return pgwire.DefaultCopyOptions(pgwire.CopyBinary), nil
	default:
		return o, sqlerr.Errorf(sqlerr.InvalidParameterValue, "COPY format %q not recognized", b.Format)
	}
	one := func(s, what string) (byte, error) {
		if len(s) != 1 {
			return 0, sqlerr.Errorf(sqlerr.FeatureNotSupported, "COPY %s must be a single one-byte character", what)
		}
		return s[0], nil
	}
	var err error
	if b.Delimiter != "" {
		if o.Delimiter, err = one(b.Delimiter, "delimiter"); err != nil {
			return o, err
		}
	}
	if b.Null != "" {
		o.Null = b.Null
	}
	o.Header = b.Header
	if b.Quote != "" {
		if o.Quote, err = one(b.Quote, "quote"); err != nil {
			return o, err
		}
	}
	if b.Escape != "" {
		if o.Escape, err = one(b.Escape, "escape"); err != nil {
			return o, err
		}
	}
	return o, nil
}

// copySink collects COPY FROM rows and inserts them as one statement when
// the client ends the data: COPY is atomic, as in PostgreSQL. Rows go to a
// batch encoder as they arrive (the bulk path, exec.BatchEncoder), which
// encodes and sorts them in the background while the next ones are parsed.
type copySink struct {
	st   *statement
	rel  *catalog.Relation
	cols []int
	// identity: the COPY names every column in table order, so a parsed
	// row is already a full row.
	identity bool
	rows     []types.Row        // the row-at-a-time path's rows
	bulk     *exec.BatchEncoder // the bulk path (nil: a time-series table)
	keyed    bool               // a row's key was given, not generated
	slab     []types.Datum
}

func (s *copySink) Write(ctx context.Context, rows []types.Row) error {
	width := len(s.rel.Columns)
	for j, r := range rows {
		full := r
		if !s.identity {
			if len(s.slab) < width {
				s.slab = make([]types.Datum, width*256)
			}
			full, s.slab = s.slab[:width:width], s.slab[width:]
			for i, c := range s.cols {
				full[c] = r[i]
			}
		}
		for i, c := range s.rel.Columns {
			if c.NotNull && !c.Hidden && full[i].IsNull() {
				return sqlerr.Errorf(sqlerr.NotNullViolation, "null value in column %q of relation %q violates not-null constraint", c.Name, s.rel.Name)
			}
		}
		if s.bulk != nil && !fillRowID(s.rel, full) {
			s.keyed = true
		}
		rows[j] = full
	}
	if s.bulk != nil {
		s.bulk.Add(rows)
	} else {
		s.rows = append(s.rows, rows...)
	}
	return nil
}

func (s *copySink) Finish(ctx context.Context) (string, error) {
	var (
		affected []types.Row
		epoch    uint64
		err      error
	)
	switch {
	case s.bulk == nil:
		affected, epoch, err = s.st.sess.insert(ctx, s.rel, s.rows, nil)
	case s.bulk.Len() < bulkInsertMinRows:
		affected, epoch, err = s.st.sess.insert(ctx, s.rel, s.bulk.Rows(), nil)
	default:
		var b *exec.InsertBatch
		if b, err = s.bulk.Finish(ctx, !s.keyed); err == nil {
			affected, epoch, err = s.st.sess.insertBulk(ctx, s.rel, b)
		}
	}
	if err != nil {
		return "", s.st.sess.integrityErrorObject(mapStorageErr(err), s.rel)
	}
	if err := s.st.sess.acknowledge(ctx, epoch); err != nil {
		return "", err
	}
	return fmt.Sprintf("COPY %d", len(affected)), nil
}

func (s *copySink) Abort() { s.rows, s.bulk = nil, nil }
