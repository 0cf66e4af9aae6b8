package expr

import (
	"context"
	"time"

	"github.com/runneldb/runnel/internal/types"
)

// Expr is a bound, typed scalar expression evaluated against one input row.
// Exprs are immutable after construction and safe for concurrent Eval.
type Expr interface {
	// Type is the result type.
	Type() types.Type
	// Eval computes the value for row. Errors are *sqlerr.Error for
	// user-visible failures (division by zero, overflow, bad casts).
	Eval(ctx *EvalContext, row types.Row) (types.Datum, error)
	// String renders the expression for EXPLAIN.
	String() string
}

// VolatileCall is implemented by calls bound outside this package (the
// frontend's session functions) that FuncExpr.Volatile cannot speak for:
// VolatileName is the function's name when a call must run each time
// anew (pg_cancel_backend signals a session; pg_backend_pid is the
// calling session's), "" otherwise. Materialized views refuse such calls
// as they refuse random().
type VolatileCall interface {
	Expr
	VolatileName() string
}

// EvalContext carries per-statement state that functions need.
type EvalContext struct {
	Ctx context.Context
	// Location is the session TimeZone (timestamptz I/O, date_trunc, ...).
	Location *time.Location
	// StatementTime is now()/current_timestamp: fixed for one statement
	// (PostgreSQL fixes it per transaction; Runnel has no multi-statement
	// write transactions).
	StatementTime time.Time
}

// ColumnRef reads column Index of the input row.
type ColumnRef struct {
	Index int
	Typ   types.Type
	// Name is used only for EXPLAIN output.
	Name string
}

func (c *ColumnRef) Type() types.Type { return c.Typ }
func (c *ColumnRef) Eval(_ *EvalContext, row types.Row) (types.Datum, error) {
	return row[c.Index], nil
}
func (c *ColumnRef) String() string {
	if c.Name != "" {
		return c.Name
	}
	return "$" + itoa(c.Index)
}

// Const is a literal value.
type Const struct {
	Value types.Datum
	Typ   types.Type
}

func (c *Const) Type() types.Type                                  { return c.Typ }
func (c *Const) Eval(*EvalContext, types.Row) (types.Datum, error) { return c.Value, nil }
func (c *Const) String() string {
	if c.Value.IsNull() {
		return "NULL"
	}
	if c.Value.Kind() == types.KindInterval {
		// As PostgreSQL's EXPLAIN shows it: '01:00:00'::interval.
		return "'" + types.FormatText(c.Value, c.Typ, nil) + "'::" + c.Typ.Name()
	}
	return c.Value.String() + "::" + c.Typ.Name()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}
