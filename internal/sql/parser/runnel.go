package parser

import (
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// RunnelStmt is a statement outside PostgreSQL's grammar.
type RunnelStmt interface{ runnelStmt() }

// Flush waits until every write acknowledged so far is committed and visible.
type Flush struct{}

// Recover forces a recovery of the streaming graph.
type Recover struct{}

// AlterParallelism is RisingWave's ALTER TABLE | MATERIALIZED VIEW | SINK
// | SOURCE | INDEX name SET PARALLELISM {= | TO} value.
type AlterParallelism struct {
	Kind         string // "table", "materialized view", ...
	Schema, Name string
	Value        string
}

// Wait (RisingWave's WAIT) returns once no streaming job is being
// created: every CREATE in progress, in any session, has finished.
type Wait struct{}

// ShowObjects lists catalog objects: SHOW TABLES [FROM schema], SHOW
// DATABASES, SHOW SCHEMAS, SHOW MATERIALIZED VIEWS [FROM schema], SHOW VIEWS,
// SHOW SOURCES, SHOW JOBS, SHOW SINKS, SHOW CLUSTER; and the sessions:
// SHOW PROCESSLIST.
type ShowObjects struct {
	Kind   ObjectKind
	Schema string // "" when no FROM clause
}

// ObjectKind names what ShowObjects lists.
type ObjectKind uint8

const (
	ShowTables ObjectKind = iota
	ShowDatabases
	ShowSchemas
	ShowMaterializedViews
	ShowViews
	ShowSources
	ShowJobs
	ShowSinks
	ShowCluster
	ShowIndex // SHOW CREATE INDEX (SHOW INDEXES is its own statement)
	ShowProcessList
)

// ShowIndexes lists a relation's indexes: SHOW INDEXES FROM|IN [schema.]name.
type ShowIndexes struct {
	Schema, Name string
}

// Describe shows the columns of a relation: DESCRIBE [schema.]name.
type Describe struct {
	Schema, Name string
}

// ShowColumns lists a relation's columns: SHOW COLUMNS FROM|IN [schema.]name.
type ShowColumns struct {
	Schema, Name string
}

// ShowCreate prints the statement that creates an object: SHOW CREATE
// TABLE | MATERIALIZED VIEW | VIEW | SOURCE [schema.]name.
type ShowCreate struct {
	Kind         ObjectKind // ShowTables, ShowMaterializedViews, ShowViews or ShowSources
	Schema, Name string
}

// CancelJobs cancels streaming jobs (DDL in progress) by id.
type CancelJobs struct {
	IDs []uint64
}

// Kill is RisingWave's KILL process_id (also quoted: KILL '42'): it
// cancels the statement the session with that process id runs.
type Kill struct {
	PID int64
}

func (*Flush) runnelStmt()            {}
func (*Recover) runnelStmt()          {}
func (*Wait) runnelStmt()             {}
func (*AlterParallelism) runnelStmt() {}
func (*ShowObjects) runnelStmt()      {}
func (*Describe) runnelStmt()         {}
func (*CancelJobs) runnelStmt()       {}
func (*Kill) runnelStmt()             {}
func (*ShowColumns) runnelStmt()      {}
func (*ShowCreate) runnelStmt()       {}
func (*ShowIndexes) runnelStmt()      {}

// word is one token of the small front's lexer.
type word struct {
	text   string // lower-cased unless quoted
	quoted bool
	punct  bool
}

// lexWords splits text into identifiers, numbers and single punctuation
// characters. ok is false for anything the front does not understand (string
// literals, operators), which leaves the text to pg_query.
func lexWords(text string) (out []word, ok bool) {
	i := 0
	for i < len(text) {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == ',' || c == '.' || c == '(' || c == ')' || c == '=':
			out = append(out, word{text: string(c), punct: true})
			i++
		case c == '"':
			j := i + 1
			var b strings.Builder
			for {
				if j >= len(text) {
					return nil, false
				}
				if text[j] == '"' {
					if j+1 < len(text) && text[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(text[j])
				j++
			}
			out = append(out, word{text: b.String(), quoted: true})
			i = j + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80:
			j := i
			for j < len(text) {
				d := text[j]
				if d == '_' || d == '$' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= '0' && d <= '9' || d >= 0x80 {
					j++
					continue
				}
				break
			}
			out = append(out, word{text: strings.ToLower(text[i:j])})
			i = j
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		default:
			return nil, false
		}
	}
	return out, true
}

func isKw(w []word, i int, kw string) bool {
	return i < len(w) && !w[i].quoted && !w[i].punct && w[i].text == kw
}

// parseRunnel recognises Runnel's own statements. ok is false when text is
// not one of them (then pg_query parses it).
func parseRunnel(text string) (RunnelStmt, bool, error) {
	if t, ok, err := parseTQL(text); err != nil {
		return nil, true, err
	} else if ok {
		return t, true, nil
	}
	if len(text) > 5 && (strings.EqualFold(text[:6], "create") || strings.EqualFold(text[:4], "drop") || strings.EqualFold(text[:5], "alter")) {
		if s, ok, err := parseSinkStatement(text); ok || err != nil {
			return s, ok, err
		}
	}
	if len(text) > 7 && strings.EqualFold(text[:6], "create") {
		cs, ok, err := parseCreateSource(text)
		if ok || err != nil {
			return cs, ok, err
		}
	}
	if k, ok, err := parseKill(text); ok || err != nil {
		return k, ok, err
	}
	w, lexOK := lexWords(text)
	if !lexOK || len(w) == 0 {
		return nil, false, nil
	}
	switch {
	case isKw(w, 0, "flush") && len(w) == 1:
		return &Flush{}, true, nil
	case isKw(w, 0, "recover") && len(w) == 1:
		return &Recover{}, true, nil
	case isKw(w, 0, "wait") && len(w) == 1:
		return &Wait{}, true, nil
	case isKw(w, 0, "alter") && len(w) > 5 && isKw(w, len(w)-4, "set") && isKw(w, len(w)-3, "parallelism"):
		k, i := "", 2
		switch {
		case isKw(w, 1, "table"), isKw(w, 1, "sink"), isKw(w, 1, "source"), isKw(w, 1, "index"):
			k = w[1].text
		case isKw(w, 1, "materialized") && isKw(w, 2, "view"):
			k, i = "materialized view", 3
		default:
			return nil, false, nil
		}
		schema, name, n, err := qualifiedName(w, i)
		if err != nil || n != len(w)-4 || !(w[n+2].text == "=" && w[n+2].punct || isKw(w, n+2, "to")) {
			return nil, true, syntaxErrorf("syntax error: expected ALTER %s name SET PARALLELISM = value", strings.ToUpper(k))
		}
		return &AlterParallelism{Kind: k, Schema: schema, Name: name, Value: w[n+3].text}, true, nil
	case isKw(w, 0, "describe"):
		schema, name, n, err := qualifiedName(w, 1)
		if err != nil || n != len(w) {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error: expected DESCRIBE [schema.]name")
		}
		return &Describe{Schema: schema, Name: name}, true, nil
	case isKw(w, 0, "cancel") && (isKw(w, 1, "jobs") || isKw(w, 1, "job")):
		c := &CancelJobs{}
		for i := 2; i < len(w); i++ {
			if (i-2)%2 == 1 {
				if w[i].text != "," || !w[i].punct {
					return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error: expected CANCEL JOBS id [, id ...]")
				}
				continue
			}
			id, err := strconv.ParseUint(w[i].text, 10, 64)
			if err != nil || w[i].quoted {
				return nil, true, sqlerr.Errorf(sqlerr.SyntaxError, "syntax error: invalid job id %q", w[i].text)
			}
			c.IDs = append(c.IDs, id)
		}
		if len(c.IDs) == 0 || (len(w)-2)%2 == 0 {
			return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error: expected CANCEL JOBS id [, id ...]")
		}
		return c, true, nil
	case isKw(w, 0, "show"):
		return parseShow(w)
	}
	return nil, false, nil
}

func parseShow(w []word) (RunnelStmt, bool, error) {
	var kind ObjectKind
	next := 2
	switch {
	case isKw(w, 1, "tables"):
		kind = ShowTables
	case isKw(w, 1, "databases"):
		kind = ShowDatabases
	case isKw(w, 1, "schemas"):
		kind = ShowSchemas
	case isKw(w, 1, "views"):
		kind = ShowViews
	case isKw(w, 1, "sources"):
		kind = ShowSources
	case isKw(w, 1, "jobs"):
		kind = ShowJobs
	case isKw(w, 1, "sinks"):
		kind = ShowSinks
	case isKw(w, 1, "cluster"):
		kind = ShowCluster
	case isKw(w, 1, "processlist"):
		kind = ShowProcessList
	case isKw(w, 1, "materialized") && isKw(w, 2, "views"):
		kind = ShowMaterializedViews
		next = 3
	case isKw(w, 1, "indexes") || isKw(w, 1, "index") || isKw(w, 1, "indices"):
		if !isKw(w, 2, "from") && !isKw(w, 2, "in") {
			return nil, true, syntaxErrorf("syntax error: expected SHOW INDEXES FROM [schema.]name")
		}
		schema, name, n, err := qualifiedName(w, 3)
		if err != nil || n != len(w) {
			return nil, true, syntaxErrorf("syntax error: expected SHOW INDEXES FROM [schema.]name")
		}
		return &ShowIndexes{Schema: schema, Name: name}, true, nil
	case isKw(w, 1, "columns"):
		if !isKw(w, 2, "from") && !isKw(w, 2, "in") {
			return nil, true, syntaxErrorf("syntax error: expected SHOW COLUMNS FROM [schema.]name")
		}
		schema, name, n, err := qualifiedName(w, 3)
		if err != nil || n != len(w) {
			return nil, true, syntaxErrorf("syntax error: expected SHOW COLUMNS FROM [schema.]name")
		}
		return &ShowColumns{Schema: schema, Name: name}, true, nil
	case isKw(w, 1, "create"):
		sc := &ShowCreate{}
		i := 3
		switch {
		case isKw(w, 2, "table"):
			sc.Kind = ShowTables
		case isKw(w, 2, "view"):
			sc.Kind = ShowViews
		case isKw(w, 2, "source"):
			sc.Kind = ShowSources
		case isKw(w, 2, "sink"):
			sc.Kind = ShowSinks
		case isKw(w, 2, "index"):
			sc.Kind = ShowIndex
		case isKw(w, 2, "materialized") && isKw(w, 3, "view"):
			sc.Kind = ShowMaterializedViews
			i = 4
		default:
			return nil, true, syntaxErrorf("syntax error: expected SHOW CREATE TABLE | MATERIALIZED VIEW | VIEW | SOURCE | SINK | INDEX name")
		}
		schema, name, n, err := qualifiedName(w, i)
		if err != nil || n != len(w) {
			return nil, true, syntaxErrorf("syntax error: expected SHOW CREATE TABLE | MATERIALIZED VIEW | VIEW | SOURCE | SINK | INDEX name")
		}
		sc.Schema, sc.Name = schema, name
		return sc, true, nil
	default:
		return nil, false, nil // SHOW <parameter>: PostgreSQL grammar
	}
	s := &ShowObjects{Kind: kind}
	if next == len(w) {
		return s, true, nil
	}
	schemaAllowed := kind == ShowTables || kind == ShowMaterializedViews || kind == ShowViews || kind == ShowSources || kind == ShowSinks
	if schemaAllowed && (isKw(w, next, "from") || isKw(w, next, "in")) && next+2 == len(w) && !w[next+1].punct {
		s.Schema = w[next+1].text
		return s, true, nil
	}
	return nil, true, sqlerr.New(sqlerr.SyntaxError, "syntax error at end of SHOW statement")
}

// parseKill recognises KILL process_id, the id a number or a quoted one
// (RisingWave's parser takes a number or a string).
func parseKill(text string) (RunnelStmt, bool, error) {
	if len(text) < 4 || !strings.EqualFold(text[:4], "kill") {
		return nil, false, nil
	}
	arg := text[4:]
	if arg != "" && arg[0] != '\'' && strings.TrimLeft(arg, " \t\r\n\f") == arg {
		return nil, false, nil // a longer word: not KILL
	}
	arg = strings.TrimSpace(arg)
	if len(arg) >= 2 && arg[0] == '\'' && arg[len(arg)-1] == '\'' {
		arg = strings.TrimSpace(arg[1 : len(arg)-1])
	}
	pid, err := strconv.ParseInt(arg, 10, 32)
	if err != nil || pid <= 0 {
		return nil, true, syntaxErrorf("syntax error: expected KILL process_id (a process id of SHOW PROCESSLIST or pg_stat_activity), got %q", arg)
	}
	return &Kill{PID: pid}, true, nil
}

func syntaxErrorf(format string, args ...any) error {
	return sqlerr.Errorf(sqlerr.SyntaxError, format, args...)
}

// qualifiedName reads name or schema.name at w[i:]; n is the index after it.
func qualifiedName(w []word, i int) (schema, name string, n int, err error) {
	if i >= len(w) || w[i].punct {
		return "", "", i, sqlerr.New(sqlerr.SyntaxError, "syntax error: expected a name")
	}
	name = w[i].text
	i++
	if i < len(w) && w[i].punct && w[i].text == "." {
		if i+1 >= len(w) || w[i+1].punct {
			return "", "", i, sqlerr.New(sqlerr.SyntaxError, "syntax error: expected a name")
		}
		schema, name = name, w[i+1].text
		i += 2
	}
	return schema, name, i, nil
}
