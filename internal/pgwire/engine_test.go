package pgwire

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// fakeEngine is an in-memory Engine understanding a handful of statements:
//
//	SELECT <item>, ...      items: integer literal, 'text', NULL, 1/0 (22012),
//	                        $N or $N::<type> (echo of a parameter)
//	SELECT * FROM series(N) N rows of one int8 column i (1..N)
//	SELECT * FROM t | SELECT count(*) FROM t
//	SELECT pg_sleep(S)      waits S seconds or until cancelled
//	INSERT INTO t VALUES (<int>, '<text>') | DELETE FROM t
//	COPY t FROM STDIN [CSV [HEADER]] | COPY t TO STDOUT [CSV [HEADER]]
//	BEGIN | COMMIT | ROLLBACK
//	SET TimeZone = '<zone>' | NOTICE '<message>'
//	PANIC                   the engine panics
//	EOFERR                  an internal error wrapping io.ErrUnexpectedEOF
//
// Anything else is a syntax error (42601) positioned at its first word.
type fakeEngine struct {
	users map[string]AuthInfo // nil: every user exists without a password

	// sleeping receives a value when pg_sleep starts (if non-nil).
	sleeping chan struct{}
	// maxSleep caps pg_sleep (fuzzing sets it to zero).
	maxSleep time.Duration
	// backends receives each session's StartupParams.Backend (if non-nil).
	backends chan Backend

	mu    sync.Mutex
	table []types.Row // t(a int4, b text)
}

var tableCols = []Column{{Name: "a", Type: types.Int32}, {Name: "b", Type: types.Text}}

func newFakeEngine() *fakeEngine { return &fakeEngine{maxSleep: time.Minute} }

func (e *fakeEngine) UserAuth(ctx context.Context, user string) (AuthInfo, error) {
	if e.users == nil {
		return AuthInfo{Superuser: true}, nil
	}
	info, ok := e.users[user]
	if !ok {
		return AuthInfo{}, sqlerr.Errorf(sqlerr.InvalidAuthorizationSpec, "role %q does not exist", user)
	}
	return info, nil
}

func (e *fakeEngine) NewSession(ctx context.Context, p StartupParams, client ClientConn) (Session, error) {
	if p.Database != "dev" {
		return nil, sqlerr.Errorf(sqlerr.InvalidCatalogName, "database %q does not exist", p.Database)
	}
	if e.backends != nil {
		e.backends <- p.Backend
	}
	if tz, ok := p.Options["TimeZone"]; ok {
		client.SetParameterStatus("TimeZone", tz)
	}
	return &fakeSession{eng: e, client: client, tx: TxIdle}, nil
}

type fakeSession struct {
	eng    *fakeEngine
	client ClientConn
	tx     TxStatus
	closed bool
}

func (s *fakeSession) TxStatus() TxStatus { return s.tx }
func (s *fakeSession) Close()             { s.closed = true }

func (s *fakeSession) OnError(error) {
	if s.tx == TxActive {
		s.tx = TxFailed
	}
}

func (s *fakeSession) Parse(ctx context.Context, sql string, paramOIDs []uint32) ([]Statement, error) {
	var out []Statement
	offset := 0
	for _, piece := range splitStatements(sql) {
		text := strings.TrimSpace(piece)
		lead := len(piece) - len(strings.TrimLeft(piece, " \t\r\n"))
		if text != "" {
			st, err := s.parseOne(text, paramOIDs)
			if err != nil {
				if e := sqlerr.From(err); e != nil && e.Position > 0 {
					return nil, e.WithPosition(e.Position + offset + lead)
				}
				return nil, err
			}
			out = append(out, st)
		}
		offset += len(piece) + 1
	}
	return out, nil
}

func splitStatements(sql string) []string {
	var out []string
	inQuote := false
	start := 0
	for i := 0; i < len(sql); i++ {
		switch sql[i] {
		case '\'':
			inQuote = !inQuote
		case ';':
			if !inQuote {
				out = append(out, sql[start:i])
				start = i + 1
			}
		}
	}
	return append(out, sql[start:])
}

var (
	reSeries  = regexp.MustCompile(`(?i)^SELECT \* FROM series\((\d+)\)$`)
	reWide    = regexp.MustCompile(`(?i)^SELECT \* FROM (wide|floats)\((\d+)\)$`)
	reSleep   = regexp.MustCompile(`(?i)^SELECT pg_sleep\(([\d.]+)\)$`)
	reInsert  = regexp.MustCompile(`(?i)^INSERT INTO t VALUES \((-?\d+), '([^']*)'\)$`)
	reCopy    = regexp.MustCompile(`(?i)^COPY\s+t\s+(FROM STDIN|TO STDOUT)(\s+(?:WITH\s+)?CSV)?(\s+HEADER)?$`)
	reSetTZ   = regexp.MustCompile(`(?i)^SET TimeZone (?:=|TO) '([^']*)'$`)
	reNotice  = regexp.MustCompile(`(?i)^NOTICE '([^']*)'$`)
	reParam   = regexp.MustCompile(`^\$(\d+)(?:::(\w+))?$`)
	typeNames = map[string]types.Type{
		"bool": types.Bool, "int2": types.Int16, "int4": types.Int32, "int8": types.Int64,
		"float4": types.Float32, "float8": types.Float64, "numeric": types.Numeric,
		"text": types.Text, "varchar": types.Varchar, "bytea": types.Bytea, "date": types.Date,
		"time": types.Time, "timestamp": types.Timestamp, "timestamptz": types.Timestamptz,
		"interval": types.Interval, "jsonb": types.Jsonb,
	}
)

// fakeStmt is a parsed statement: a describe function and an exec function.
type fakeStmt struct {
	desc StatementDescription
	exec func(ctx context.Context, params []types.Datum) (Result, error)
}

func (f *fakeStmt) Describe(context.Context) (StatementDescription, error) { return f.desc, nil }
func (f *fakeStmt) Execute(ctx context.Context, params []types.Datum) (Result, error) {
	return f.exec(ctx, params)
}
func (f *fakeStmt) Close() {}

func (s *fakeSession) parseOne(text string, paramOIDs []uint32) (Statement, error) {
	word := strings.ToUpper(strings.Fields(text)[0])
	st := &fakeStmt{}
	guard := func(run func(ctx context.Context, params []types.Datum) (Result, error)) {
		st.exec = func(ctx context.Context, params []types.Datum) (Result, error) {
			if s.tx == TxFailed && word != "COMMIT" && word != "ROLLBACK" {
				return Result{}, sqlerr.New(sqlerr.InFailedSQLTransaction,
					"current transaction is aborted, commands ignored until end of transaction block")
			}
			return run(ctx, params)
		}
	}
	e := s.eng
	switch {
	case word == "BEGIN" || word == "COMMIT" || word == "ROLLBACK":
		guard(func(context.Context, []types.Datum) (Result, error) {
			if word == "BEGIN" {
				s.tx = TxActive
				return Result{Tag: "BEGIN"}, nil
			}
			failed := s.tx == TxFailed
			s.tx = TxIdle
			if failed || word == "ROLLBACK" {
				return Result{Tag: "ROLLBACK"}, nil
			}
			return Result{Tag: "COMMIT"}, nil
		})
	case word == "EOFERR":
		guard(func(context.Context, []types.Datum) (Result, error) {
			return Result{}, fmt.Errorf("reading block 7: %w", io.ErrUnexpectedEOF)
		})
	case word == "PANIC":
		guard(func(context.Context, []types.Datum) (Result, error) { panic("engine bug") })
	case reSeries.MatchString(text):
		n, _ := strconv.ParseInt(reSeries.FindStringSubmatch(text)[1], 10, 64)
		cols := []Column{{Name: "i", Type: types.Int64}}
		st.desc.Columns = cols
		guard(func(context.Context, []types.Datum) (Result, error) {
			return Result{Columns: cols, Rows: &seriesIter{n: n, row: make(types.Row, 1)}}, nil
		})
	case reWide.MatchString(text):
		m := reWide.FindStringSubmatch(text)
		n, _ := strconv.ParseInt(m[2], 10, 64)
		cols := []Column{{Name: "i", Type: types.Int64}, {Name: "s", Type: types.Text},
			{Name: "b", Type: types.Bool}, {Name: "ts", Type: types.Timestamptz}}
		floats := strings.EqualFold(m[1], "floats")
		if floats {
			cols = []Column{{Name: "f", Type: types.Float64}}
		}
		st.desc.Columns = cols
		guard(func(context.Context, []types.Datum) (Result, error) {
			return Result{Columns: cols, Rows: &wideIter{n: n, floats: floats, row: make(types.Row, len(cols))}}, nil
		})
	case reSleep.MatchString(text):
		secs, _ := strconv.ParseFloat(reSleep.FindStringSubmatch(text)[1], 64)
		cols := []Column{{Name: "pg_sleep", Type: types.Text}}
		st.desc.Columns = cols
		guard(func(ctx context.Context, _ []types.Datum) (Result, error) {
			if e.sleeping != nil {
				e.sleeping <- struct{}{}
			}
			d := min(time.Duration(secs*float64(time.Second)), e.maxSleep)
			select {
			case <-ctx.Done():
				return Result{}, ctx.Err()
			case <-time.After(d):
			}
			return Result{Columns: cols, Rows: SliceRows([]types.Row{{types.DVarchar("")}})}, nil
		})
	case strings.EqualFold(text, "SELECT * FROM t"):
		st.desc.Columns = tableCols
		guard(func(context.Context, []types.Datum) (Result, error) {
			e.mu.Lock()
			rows := append([]types.Row(nil), e.table...)
			e.mu.Unlock()
			return Result{Columns: tableCols, Rows: SliceRows(rows)}, nil
		})
	case strings.EqualFold(text, "SELECT count(*) FROM t"):
		cols := []Column{{Name: "count", Type: types.Int64}}
		st.desc.Columns = cols
		guard(func(context.Context, []types.Datum) (Result, error) {
			e.mu.Lock()
			n := len(e.table)
			e.mu.Unlock()
			return Result{Columns: cols, Rows: SliceRows([]types.Row{{types.DInt64(int64(n))}})}, nil
		})
	case reInsert.MatchString(text):
		m := reInsert.FindStringSubmatch(text)
		a, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil {
			return nil, sqlerr.New(sqlerr.NumericValueOutOfRange, "integer out of range")
		}
		guard(func(context.Context, []types.Datum) (Result, error) {
			e.mu.Lock()
			e.table = append(e.table, types.Row{types.DInt32(int32(a)), types.DVarchar(m[2])})
			e.mu.Unlock()
			return Result{Tag: "INSERT 0 1"}, nil
		})
	case strings.EqualFold(text, "DELETE FROM t"):
		guard(func(context.Context, []types.Datum) (Result, error) {
			e.mu.Lock()
			n := len(e.table)
			e.table = nil
			e.mu.Unlock()
			return Result{Tag: fmt.Sprintf("DELETE %d", n)}, nil
		})
	case reCopy.MatchString(text):
		m := reCopy.FindStringSubmatch(text)
		opts := DefaultCopyOptions(CopyText)
		if m[2] != "" {
			opts = DefaultCopyOptions(CopyCSV)
		}
		opts.Header = m[3] != ""
		in := strings.EqualFold(m[1], "FROM STDIN")
		guard(func(context.Context, []types.Datum) (Result, error) {
			cp := &Copy{In: in, Options: opts, Columns: tableCols}
			if in {
				cp.Sink = &tableSink{eng: e}
				return Result{Copy: cp}, nil
			}
			e.mu.Lock()
			rows := append([]types.Row(nil), e.table...)
			e.mu.Unlock()
			return Result{Copy: cp, Columns: tableCols, Rows: SliceRows(rows)}, nil
		})
	case reSetTZ.MatchString(text):
		tz := reSetTZ.FindStringSubmatch(text)[1]
		guard(func(context.Context, []types.Datum) (Result, error) {
			s.client.SetParameterStatus("TimeZone", tz)
			return Result{Tag: "SET"}, nil
		})
	case reNotice.MatchString(text):
		msg := reNotice.FindStringSubmatch(text)[1]
		guard(func(context.Context, []types.Datum) (Result, error) {
			s.client.Notice(Notice{Message: msg, Code: "01000", Severity: "WARNING"})
			return Result{Tag: "DO"}, nil
		})
	case word == "SELECT":
		return s.parseSelectList(st, text[len("SELECT"):], len("SELECT"), paramOIDs, guard)
	default:
		return nil, sqlerr.Errorf(sqlerr.SyntaxError, "syntax error at or near %q", strings.Fields(text)[0]).WithPosition(1)
	}
	return st, nil
}

func (s *fakeSession) parseSelectList(st *fakeStmt, list string, base int, paramOIDs []uint32,
	guard func(func(context.Context, []types.Datum) (Result, error))) (Statement, error) {
	type item struct {
		param  int // 1-based, 0 for a constant
		val    types.Datum
		divErr bool
	}
	var items []item
	var maxParam int
	ptypes := map[int]types.Type{}
	pos := base
	for _, raw := range splitComma(list) {
		it := strings.TrimSpace(raw)
		col := Column{Name: "?column?"}
		var x item
		switch {
		case it == "1/0":
			x.divErr = true
			col.Type = types.Int32
		case strings.EqualFold(it, "NULL"):
			col.Type = types.Text
		case len(it) >= 2 && it[0] == '\'' && it[len(it)-1] == '\'':
			x.val = types.DVarchar(it[1 : len(it)-1])
			col.Type = types.Text
		case reParam.MatchString(it):
			m := reParam.FindStringSubmatch(it)
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 1 || n > 1000 {
				return nil, sqlerr.Errorf(sqlerr.UndefinedParameter, "there is no parameter $%s", m[1])
			}
			x.param = n
			t := types.Text
			if m[2] != "" {
				tt, ok := typeNames[strings.ToLower(m[2])]
				if !ok {
					return nil, sqlerr.Errorf(sqlerr.UndefinedObject, "type %q does not exist", m[2])
				}
				t = tt
			} else if n <= len(paramOIDs) && paramOIDs[n-1] != 0 {
				if tt, ok := types.FromOID(paramOIDs[n-1]); ok {
					t = tt
				}
			}
			ptypes[n] = t
			maxParam = max(maxParam, n)
			col.Type = t
		default:
			v, err := strconv.ParseInt(it, 10, 64)
			if err != nil {
				lead := len(raw) - len(strings.TrimLeft(raw, " "))
				return nil, sqlerr.Errorf(sqlerr.SyntaxError, "syntax error at or near %q", it).WithPosition(pos + lead + 1)
			}
			if v == int64(int32(v)) {
				x.val, col.Type = types.DInt32(int32(v)), types.Int32
			} else {
				x.val, col.Type = types.DInt64(v), types.Int64
			}
		}
		pos += len(raw) + 1
		items = append(items, x)
		st.desc.Columns = append(st.desc.Columns, col)
	}
	for i := 1; i <= maxParam; i++ {
		t, ok := ptypes[i]
		if !ok {
			return nil, sqlerr.Errorf(sqlerr.IndeterminateDatatype, "could not determine data type of parameter $%d", i)
		}
		st.desc.ParamTypes = append(st.desc.ParamTypes, t)
	}
	cols := st.desc.Columns
	guard(func(_ context.Context, params []types.Datum) (Result, error) {
		row := make(types.Row, len(items))
		for i, x := range items {
			switch {
			case x.divErr:
				return Result{}, sqlerr.New(sqlerr.DivisionByZero, "division by zero")
			case x.param > 0:
				if x.param > len(params) {
					return Result{}, sqlerr.Errorf(sqlerr.UndefinedParameter, "there is no parameter $%d", x.param)
				}
				row[i] = params[x.param-1]
			default:
				row[i] = x.val
			}
		}
		return Result{Columns: cols, Rows: SliceRows([]types.Row{row})}, nil
	})
	return st, nil
}

func splitComma(s string) []string {
	var out []string
	inQuote := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// seriesIter reuses one row, as the Engine contract allows.
type seriesIter struct {
	i, n int64
	row  types.Row
}

func (it *seriesIter) Next(context.Context) (types.Row, error) {
	if it.i >= it.n {
		return nil, nil
	}
	it.i++
	it.row[0] = types.DInt64(it.i)
	return it.row, nil
}
func (it *seriesIter) Close() {}

// wideIter yields rows of four columns of common types (the benchmark's
// shape), or of one float8 column.
type wideIter struct {
	i, n   int64
	floats bool
	row    types.Row
}

func (it *wideIter) Next(context.Context) (types.Row, error) {
	if it.i >= it.n {
		return nil, nil
	}
	it.i++
	if it.floats {
		it.row[0] = types.DFloat64(float64(it.i) * 0.37)
		return it.row, nil
	}
	it.row[0] = types.DInt64(it.i)
	it.row[1] = types.DVarchar("some text value")
	it.row[2] = types.DBool(it.i%2 == 0)
	it.row[3] = types.DTimestamptz(1_700_000_000_000_000 + it.i*1_000_000)
	return it.row, nil
}
func (it *wideIter) Close() {}

type tableSink struct {
	eng  *fakeEngine
	rows []types.Row
}

func (s *tableSink) Write(_ context.Context, rows []types.Row) error {
	for _, r := range rows {
		s.rows = append(s.rows, r.Copy())
	}
	return nil
}

func (s *tableSink) Finish(context.Context) (string, error) {
	s.eng.mu.Lock()
	s.eng.table = append(s.eng.table, s.rows...)
	s.eng.mu.Unlock()
	return "", nil
}

func (s *tableSink) Abort() { s.rows = nil }
