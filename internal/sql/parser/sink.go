package parser

import (
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// CreateSink is RisingWave's CREATE SINK:
//
//	CREATE SINK [IF NOT EXISTS] [schema.]name
//	    { FROM [schema.]relation | AS query }
//	    WITH (connector = '...', k = 'v', ...)
//	    [FORMAT f ENCODE e [(k = 'v', ...)]]
//
// The query is kept as text (the server binds it as a view definition).
type CreateSink struct {
	Schema, Name string
	IfNotExists  bool
	// FromSchema.From names the relation of CREATE SINK ... FROM; Query is
	// the text of CREATE SINK ... AS query. Exactly one is set.
	FromSchema, From string
	Query            string
	// Options are the WITH options, keys lower-cased.
	Options map[string]string
	// Format and Encode are FORMAT x ENCODE y (upper-cased; "" when absent).
	Format, Encode string
	EncodeOptions  map[string]string
	// IntoSchema.Into names the table of CREATE SINK ... INTO table
	// [(columns)] (RisingWave's sink into a table; WITH is optional);
	// IntoColumns are the listed target columns.
	IntoSchema, Into string
	IntoColumns      []string
}

// DropSink is DROP SINK [IF EXISTS] [schema.]name [CASCADE | RESTRICT].
type DropSink struct {
	Schema, Name string
	IfExists     bool
}

// AlterRename is ALTER SOURCE | SINK [IF EXISTS] [schema.]name RENAME TO
// new (PostgreSQL's grammar has neither object).
type AlterRename struct {
	Sink         bool // else a source
	Schema, Name string
	NewName      string
	IfExists     bool
	// Owner is the role of ALTER SOURCE | SINK name OWNER TO role (then
	// NewName is empty); "current_user" and "session_user" are the
	// session's.
	Owner string
}

func (*AlterRename) runnelStmt() {}
func (*CreateSink) runnelStmt()  {}
func (*DropSink) runnelStmt()    {}

// parseSinkStatement recognises CREATE SINK and DROP SINK; ok is false for
// anything else.
func parseSinkStatement(text string) (RunnelStmt, bool, error) {
	res, err := pg_query.Scan(text)
	if err != nil {
		return nil, false, nil
	}
	var toks []tok
	for _, t := range res.Tokens {
		if t.Token == pg_query.Token_SQL_COMMENT || t.Token == pg_query.Token_C_COMMENT {
			continue
		}
		toks = append(toks, tok{text: strings.ToLower(text[t.Start:t.End]), start: int(t.Start), end: int(t.End)})
	}
	if n := len(toks); n > 0 && toks[n-1].text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) >= 3 && toks[0].text == "alter" && (toks[1].text == "sink" || toks[1].text == "source") {
		return parseAlterRename(text, toks)
	}
	if len(toks) < 3 || toks[1].text != "sink" {
		return nil, false, nil
	}
	switch toks[0].text {
	case "drop":
		return parseDropSink(text, toks)
	case "create":
		return parseCreateSink(text, toks)
	}
	return nil, false, nil
}

// sinkName reads [schema.]name at toks[i:]; n is the index after it.
func sinkName(text string, toks []tok, i int) (schema, name string, n int, ok bool) {
	ident := func(t tok) (string, bool) {
		s := text[t.start:t.end]
		if strings.HasPrefix(s, `"`) {
			return strings.ReplaceAll(strings.Trim(s, `"`), `""`, `"`), true
		}
		for _, c := range t.text {
			if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80) {
				return "", false
			}
		}
		return t.text, true
	}
	if i >= len(toks) {
		return "", "", i, false
	}
	name, ok = ident(toks[i])
	if !ok {
		return "", "", i, false
	}
	i++
	if i+1 < len(toks) && toks[i].text == "." {
		schema = name
		if name, ok = ident(toks[i+1]); !ok {
			return "", "", i, false
		}
		i += 2
	}
	return schema, name, i, true
}

func parseAlterRename(text string, toks []tok) (RunnelStmt, bool, error) {
	a := &AlterRename{Sink: toks[1].text == "sink"}
	shape := "expected ALTER " + strings.ToUpper(toks[1].text) + " [IF EXISTS] [schema.]name RENAME TO new_name"
	i := 2
	if i+1 < len(toks) && toks[i].text == "if" && toks[i+1].text == "exists" {
		a.IfExists = true
		i += 2
	}
	schema, name, n, ok := sinkName(text, toks, i)
	if !ok {
		return nil, true, syntaxErrorf("syntax error: %s", shape)
	}
	if n+3 == len(toks) && toks[n].text == "owner" && toks[n+1].text == "to" {
		_, owner, m, ok := sinkName(text, toks, n+2)
		if !ok || m != len(toks) {
			return nil, true, syntaxErrorf("syntax error: expected ALTER %s name OWNER TO role", strings.ToUpper(toks[1].text))
		}
		a.Schema, a.Name, a.Owner = schema, name, owner
		return a, true, nil
	}
	if n+1 < len(toks) && toks[n].text == "set" && toks[n+1].text == "parallelism" {
		return nil, false, nil // ALTER ... SET PARALLELISM (runnel.go)
	}
	if n+3 != len(toks) || toks[n].text != "rename" || toks[n+1].text != "to" {
		return nil, true, sqlerr.Errorf(sqlerr.FeatureNotSupported, "this form of ALTER %s is not supported (RENAME TO, OWNER TO and SET PARALLELISM are)", strings.ToUpper(toks[1].text))
	}
	_, newName, m, ok := sinkName(text, toks, n+2)
	if !ok || m != len(toks) {
		return nil, true, syntaxErrorf("syntax error: %s", shape)
	}
	a.Schema, a.Name, a.NewName = schema, name, newName
	return a, true, nil
}

func parseDropSink(text string, toks []tok) (RunnelStmt, bool, error) {
	d := &DropSink{}
	i := 2
	if i+1 < len(toks) && toks[i].text == "if" && toks[i+1].text == "exists" {
		d.IfExists = true
		i += 2
	}
	schema, name, n, ok := sinkName(text, toks, i)
	if !ok {
		return nil, true, syntaxErrorf("syntax error: expected DROP SINK [IF EXISTS] [schema.]name")
	}
	if n < len(toks) && (toks[n].text == "cascade" || toks[n].text == "restrict") {
		n++
	}
	if n != len(toks) {
		return nil, true, syntaxErrorf("syntax error at or near %q: expected DROP SINK [IF EXISTS] [schema.]name", text[toks[n].start:toks[n].end])
	}
	d.Schema, d.Name = schema, name
	return d, true, nil
}

func parseCreateSink(text string, toks []tok) (RunnelStmt, bool, error) {
	const shape = "expected CREATE SINK [IF NOT EXISTS] name { FROM relation | AS query } WITH (connector = '...', ...) [FORMAT ... ENCODE ...]"
	cs := &CreateSink{}
	i := 2
	if i+2 < len(toks) && toks[i].text == "if" && toks[i+1].text == "not" && toks[i+2].text == "exists" {
		cs.IfNotExists = true
		i += 3
	}
	schema, name, i, ok := sinkName(text, toks, i)
	if !ok {
		return nil, true, syntaxErrorf("syntax error: %s", shape)
	}
	cs.Schema, cs.Name = schema, name
	if i < len(toks) && toks[i].text == "into" {
		ts, tn, n, ok := sinkName(text, toks, i+1)
		if !ok {
			return nil, true, syntaxErrorf("syntax error: expected CREATE SINK name INTO [schema.]table [(column, ...)] { FROM relation | AS query }")
		}
		cs.IntoSchema, cs.Into, i = ts, tn, n
		if i < len(toks) && toks[i].text == "(" {
			for i++; ; i++ {
				_, col, n, ok := sinkName(text, toks, i)
				if !ok || n >= len(toks) || n != i+1 || toks[n].text != "," && toks[n].text != ")" {
					return nil, true, syntaxErrorf("syntax error in the column list of CREATE SINK %s INTO %s", name, tn)
				}
				cs.IntoColumns = append(cs.IntoColumns, col)
				i = n
				if toks[n].text == ")" {
					i++
					break
				}
			}
		}
	}
	// The WITH options are the last top-level "WITH (" whose parentheses
	// are followed only by FORMAT ... ENCODE ... (a query may start with
	// WITH too).
	withAt := -1
	depth := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
		case "with":
			if depth == 0 && j+1 < len(toks) && toks[j+1].text == "(" {
				withAt = j
			}
		}
	}
	if withAt < 0 && cs.Into == "" {
		return nil, true, syntaxErrorf("syntax error: CREATE SINK needs WITH (connector = '...'): %s", shape)
	}
	j := len(toks)
	if withAt >= 0 {
		opts, n := encodeOptions(text, toks[withAt+1:])
		if n < 0 {
			return nil, true, syntaxErrorf("syntax error in the WITH options of CREATE SINK %s", name)
		}
		cs.Options = opts
		j = withAt + 1 + n
	} else {
		withAt = len(toks)
	}
	if j < len(toks) {
		if toks[j].text != "format" || j+3 >= len(toks) || toks[j+2].text != "encode" {
			return nil, true, syntaxErrorf("syntax error at or near %q: %s", text[toks[j].start:toks[j].end], shape)
		}
		cs.Format = strings.ToUpper(toks[j+1].text)
		cs.Encode = strings.ToUpper(toks[j+3].text)
		j += 4
		if j < len(toks) && toks[j].text == "(" {
			eo, n := encodeOptions(text, toks[j:])
			if n < 0 {
				return nil, true, syntaxErrorf("syntax error in the ENCODE options of CREATE SINK %s", name)
			}
			cs.EncodeOptions = eo
			j += n
		}
		if j != len(toks) {
			return nil, true, syntaxErrorf("syntax error at or near %q: %s", text[toks[j].start:toks[j].end], shape)
		}
	}
	switch {
	case i < len(toks) && toks[i].text == "from":
		fs, f, n, ok := sinkName(text, toks, i+1)
		if !ok || n != withAt {
			return nil, true, syntaxErrorf("syntax error: %s", shape)
		}
		cs.FromSchema, cs.From = fs, f
	case i < len(toks) && toks[i].text == "as" && i+1 < withAt:
		cs.Query = strings.TrimSpace(text[toks[i+1].start:toks[withAt-1].end])
	default:
		return nil, true, syntaxErrorf("syntax error: %s", shape)
	}
	return cs, true, nil
}
