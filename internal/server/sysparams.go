package server

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/pgwire"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// System parameters are cluster-wide settings (ALTER SYSTEM SET / RESET,
// superuser only), stored in the catalog so that they survive restarts,
// and shown by SHOW name and SHOW PARAMETERS.
type systemParam struct {
	def   string
	desc  string
	check func(string) (string, error) // canonical value or error
	// applied says when a change takes effect, for the notice.
	applied string
}

var systemParams = map[string]systemParam{
	"streaming_strict_consistency": {
		def:   "true",
		desc:  "whether streaming executors fail on input that contradicts their state (true) or log it and carry on (false)",
		check: boolParam("streaming_strict_consistency"),
		applied: "it applies to materialized views created from now on and to running ones at their next recovery " +
			"(RECOVER applies it to all now)",
	},
}

func boolParam(name string) func(string) (string, error) {
	return func(v string) (string, error) {
		switch strings.ToLower(v) {
		case "on", "true", "1", "yes":
			return "true", nil
		case "off", "false", "0", "no":
			return "false", nil
		}
		return "", sqlerr.Errorf(sqlerr.InvalidParameterValue, "parameter %q requires a Boolean value", name)
	}
}

// sysParams caches the stored values (the catalog is the truth).
type sysParams struct {
	mu     sync.Mutex
	values map[string]string
}

// loadSystemParams reads every known parameter from the catalog.
func (s *Server) loadSystemParams(ctx context.Context) error {
	s.params.mu.Lock()
	defer s.params.mu.Unlock()
	s.params.values = map[string]string{}
	for name, p := range systemParams {
		v, ok, err := s.catalog.SystemParam(ctx, name)
		if err != nil {
			return err
		}
		if !ok {
			v = p.def
		}
		s.params.values[name] = v
	}
	return nil
}

// systemParam returns a parameter's current value.
func (s *Server) systemParam(name string) string {
	s.params.mu.Lock()
	defer s.params.mu.Unlock()
	if v, ok := s.params.values[name]; ok {
		return v
	}
	return systemParams[name].def
}

// strictConsistency is streaming_strict_consistency (I6: strict fails the
// actor on inconsistent input; non-strict logs and tolerates it).
func (s *Server) strictConsistency() bool {
	return s.systemParam("streaming_strict_consistency") != "false"
}

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
	p, ok := systemParams[name]
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
		v, err := p.check(strings.Join(parts, ", "))
		if err != nil {
			return pgwire.Result{}, err
		}
		value = v
	case pg_query.VariableSetKind_VAR_SET_DEFAULT, pg_query.VariableSetKind_VAR_RESET:
		value, reset = p.def, true
	default:
		return pgwire.Result{}, sqlerr.Errorf(sqlerr.FeatureNotSupported, "this form of ALTER SYSTEM is not supported for %s", name)
	}
	s := ss.s
	if err := s.catalog.SetSystemParam(ctx, name, value, reset); err != nil {
		return pgwire.Result{}, err
	}
	s.params.mu.Lock()
	if s.params.values == nil {
		s.params.values = map[string]string{}
	}
	s.params.values[name] = value
	s.params.mu.Unlock()
	s.log.Info("system parameter changed", "name", name, "value", value, "by", ss.user.Name)
	if p.applied != "" {
		ss.client.Notice(pgwire.Notice{Message: fmt.Sprintf("%s is now %s; %s", name, value, p.applied)})
	}
	return pgwire.Result{Tag: "ALTER SYSTEM"}, nil
}

// showSystemParam answers SHOW name for a system parameter.
func (ss *session) showSystemParam(name string) (pgwire.Result, bool) {
	if _, ok := systemParams[name]; !ok {
		return pgwire.Result{}, false
	}
	cols := []pgwire.Column{{Name: name, Type: types.Text}}
	return pgwire.Result{Columns: cols, Rows: pgwire.SliceRows([]types.Row{{types.DVarchar(ss.s.systemParam(name))}}), Tag: "SHOW"}, true
}

// showParameters answers SHOW PARAMETERS: every system parameter.
func (ss *session) showParameters() pgwire.Result {
	names := make([]string, 0, len(systemParams))
	for n := range systemParams {
		names = append(names, n)
	}
	sort.Strings(names)
	rows := make([]types.Row, 0, len(names))
	for _, n := range names {
		rows = append(rows, types.Row{types.DVarchar(n), types.DVarchar(ss.s.systemParam(n)), types.DVarchar(systemParams[n].desc)})
	}
	cols := []pgwire.Column{{Name: "Name", Type: types.Text}, {Name: "Value", Type: types.Text}, {Name: "Description", Type: types.Text}}
	return pgwire.Result{Columns: cols, Rows: pgwire.SliceRows(rows), Tag: "SHOW"}
}
