package frontend

import (
	"context"
	"fmt"
	"sort"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/sysparam"
	"github.com/runneldb/runnel/internal/types"
)

// alterSystem runs ALTER SYSTEM SET name = value | TO DEFAULT and ALTER
// SYSTEM RESET name.
func (ss *session) alterSystem(ctx context.Context, n *pg_query.AlterSystemStmt) (pgwire.Result, error) {
	if !ss.user.Superuser {
		return pgwire.Result{}, sqlerr.New(sqlerr.InsufficientPrivilege, "must be superuser to execute ALTER SYSTEM")
	}
	set := n.GetSetstmt()
	if set == nil {
		return pgwire.Result{}, sqlerr.New(sqlerr.SyntaxError, "ALTER SYSTEM needs SET or RESET")
	}
	name := strings.ToLower(set.Name)
	p, ok := sysparam.Params[name]
	if !ok {
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.UndefinedObject, "unrecognized system parameter %q", set.Name)
	}
	value, reset := "", false
	switch set.Kind {
	case pg_query.VariableSetKind_VAR_SET_VALUE:
		parts := make([]string, 0, len(set.Args))
		for _, a := range set.Args {
			parts = append(parts, constText(a))
		}
		v, err := p.Check(strings.Join(parts, ", "))
		if err != nil {
			return pgwire.Result{}, err
		}
		value = v
	case pg_query.VariableSetKind_VAR_SET_DEFAULT, pg_query.VariableSetKind_VAR_RESET:
		value, reset = p.Default, true
	default:
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported, "this form of ALTER SYSTEM is not supported for %s", name)
	}
	if err := ss.s.meta.SetSystemParam(ctx, name, value, reset, ss.user.Name); err != nil {
		return pgwire.Result{}, err
	}
	if p.Applied != "" {
		ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("%s is now %s; %s", name, value, p.Applied)})
	}
	return pgwire.Result{Tag: "ALTER SYSTEM"}, nil
}

// showSystemParam answers SHOW name for a system parameter.
func (ss *session) showSystemParam(name string) (pgwire.Result, bool) {
	if _, ok := sysparam.Params[name]; !ok {
		return pgwire.Result{}, false
	}
	cols := []pgwire.Column{{Name: name, Type: types.Text}}
	return pgwire.Result{Columns: cols, Rows: pgwire.SliceRows([]types.Row{{types.DVarchar(ss.s.meta.SystemParam(name))}}), Tag: "SHOW"}, true
}

// showParameters answers SHOW PARAMETERS: every system parameter.
func (ss *session) showParameters() pgwire.Result {
	names := make([]string, 0, len(sysparam.Params))
	for n := range sysparam.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	rows := make([]types.Row, 0, len(names))
	for _, n := range names {
		rows = append(rows, types.Row{types.DVarchar(n), types.DVarchar(ss.s.meta.SystemParam(n)), types.DVarchar(sysparam.Params[n].Description)})
	}
	cols := []pgwire.Column{{Name: "Name", Type: types.Text}, {Name: "Value", Type: types.Text}, {Name: "Description", Type: types.Text}}
	return pgwire.Result{Columns: cols, Rows: pgwire.SliceRows(rows), Tag: "SHOW"}
}
