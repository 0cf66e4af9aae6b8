package parser

import (
	"regexp"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// CreateSource is RisingWave's CREATE SOURCE, or a CREATE TABLE using
// RisingWave-only clauses (WATERMARK FOR, APPEND ONLY, FORMAT ... ENCODE
// ...). The PostgreSQL part is parsed by pg_query from the statement with
// those clauses cut out: Create is that CreateStmt.
type CreateSource struct {
	// IsSource is true for CREATE SOURCE (no storage of its own).
	IsSource bool
	Create   *pg_query.CreateStmt
	// Text is the text pg_query parsed into Create (Create's locations
	// are offsets into it).
	Text string
	// Watermark is WATERMARK FOR col AS expr (nil when absent).
	Watermark *Watermark
	// AppendOnly is the APPEND ONLY clause.
	AppendOnly bool
	// Format and Encode are FORMAT x ENCODE y (upper-cased; "" when absent);
	// EncodeOptions are the ENCODE y (k = v, ...) options.
	Format, Encode string
	EncodeOptions  map[string]string
	// Includes are the INCLUDE clauses (RisingWave's additional columns),
	// in order: INCLUDE key | partition | offset | timestamp | header
	// ['name'] [AS col].
	Includes []Include
	// FromSource and FromTable are CREATE TABLE ... FROM source TABLE
	// 'upstream' (a CDC table fed by a shared source); "" when absent.
	// FromSource may be schema-qualified.
	FromSource, FromTable string
	// StarColumns is a column list that starts with * (CREATE TABLE t (*)
	// FROM source TABLE 'public.t'): the upstream table's columns and
	// primary key, read at CREATE.
	StarColumns bool
	// TimeIndex is the column of GreptimeDB's TIME INDEX (a column
	// constraint `ts TIMESTAMP TIME INDEX` or an element `TIME INDEX (ts)`),
	// "" when absent. In such a statement GreptimeDB's STRING and DOUBLE
	// column types read as TEXT and DOUBLE PRECISION, and ENGINE = name is
	// dropped.
	TimeIndex string
}

// Include is one INCLUDE clause: Kind is key, partition, offset,
// timestamp or header; Header the header name of INCLUDE header 'name'
// ("" for all headers); Column the AS name ("" when absent).
type Include struct {
	Kind, Header, Column string
}

// Watermark is WATERMARK FOR Column AS Expr.
type Watermark struct {
	Column string
	Expr   *pg_query.Node
	// Text is Expr's source text.
	Text string
}

func (*CreateSource) runnelStmt() {}

type tok struct {
	text       string // lower-cased
	start, end int
}

// parseCreateSource recognises CREATE SOURCE and CREATE TABLE with
// RisingWave clauses; ok is false when text is neither (pg_query then
// parses it, or reports its syntax error).
func parseCreateSource(text string) (*CreateSource, bool, error) {
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
	if len(toks) < 3 || toks[0].text != "create" || (toks[1].text != "source" && toks[1].text != "table") {
		return nil, false, nil
	}
	cs := &CreateSource{IsSource: toks[1].text == "source"}
	var cuts []cut
	withDepth := -1 // depth of the WITH (...) option list being read
	depth := 0
	var wmText string
	// GreptimeDB's form (TIME INDEX): elemStart is the first token of the
	// current column-list element; gcuts are applied only if a TIME INDEX
	// is found.
	elemStart := -1
	var gcuts []cut
	var commaCuts []cut
	// A CDC source has no column list (CREATE SOURCE pg WITH (...)), nor
	// does a source or table whose columns come from its schema (CREATE
	// TABLE t WITH (...) FORMAT PLAIN ENCODE PROTOBUF (...)); give
	// pg_query an empty one.
	if n := nameEnd(toks); n > 0 && n+1 < len(toks) && toks[n+1].text != "(" &&
		(cs.IsSource || toks[n+1].text == "with" && hasToken(toks, "format")) {
		cuts = append(cuts, cut{toks[n].end, toks[n].end, " ()"})
	}
	// (*) or (*, more columns): every column of the upstream table first
	// (RisingWave's form for a CDC table whose schema PostgreSQL knows).
	if n := nameEnd(toks); !cs.IsSource && n > 0 && n+3 < len(toks) && toks[n+1].text == "(" && toks[n+2].text == "*" &&
		(toks[n+3].text == ")" || toks[n+3].text == ",") {
		cs.StarColumns = true
		end := toks[n+2].end
		if toks[n+3].text == "," {
			end = toks[n+3].end
		}
		cuts = append(cuts, cut{toks[n+2].start, end, ""})
	}
	for i := 2; i < len(toks); i++ {
		t := toks[i]
		switch t.text {
		case "(":
			depth++
			if depth == 1 && i > 0 && toks[i-1].text == "with" {
				withDepth = 1
			} else if depth == 1 && elemStart < 0 {
				elemStart = i + 1
				greptimeType(text, toks, i+2, func(c cut) { gcuts = append(gcuts, c) })
			}
			continue
		case ")":
			if depth == withDepth {
				withDepth = -1
			}
			depth--
			continue
		}
		if depth == 1 && t.text == "," && i+1 < len(toks) && toks[i+1].text == ")" {
			// RisingWave allows a trailing comma in the column list and
			// in WITH (...) (its documentation's examples have them);
			// PostgreSQL does not, so a plain CREATE TABLE keeps
			// PostgreSQL's syntax error (see below).
			commaCuts = append(commaCuts, cut{t.start, t.end, ""})
			continue
		}
		if depth == 1 && withDepth == 1 && (toks[i-1].text == "(" || toks[i-1].text == ",") {
			// An option key: RisingWave allows a.b.c, PostgreSQL at most
			// one dot; quote dotted keys as one identifier.
			j := i
			for j+2 < len(toks) && toks[j+1].text == "." {
				j += 2
			}
			if j > i+2 {
				key := strings.ReplaceAll(text[t.start:toks[j].end], `"`, "")
				cuts = append(cuts, cut{t.start, toks[j].end, `"` + key + `"`})
				i = j
			}
			continue
		}
		if depth == 1 && withDepth != 1 && t.text == "," {
			elemStart = i + 1
			greptimeType(text, toks, i+2, func(c cut) { gcuts = append(gcuts, c) })
			continue
		}
		if depth == 1 && withDepth != 1 && t.text == "time" && i+1 < len(toks) && toks[i+1].text == "index" && elemStart >= 0 {
			if i == elemStart {
				// TIME INDEX (col) as an element: remove it and one comma.
				if i+4 >= len(toks) || toks[i+2].text != "(" || toks[i+4].text != ")" {
					return nil, false, nil
				}
				cs.TimeIndex = identText(text, toks[i+3:i+4])
				start, end := t.start, toks[i+4].end
				if toks[i-1].text == "," {
					start = toks[i-1].start
				} else if i+5 < len(toks) && toks[i+5].text == "," {
					end = toks[i+5].end
				}
				cuts = append(cuts, cut{start, end, ""})
				i += 4
				continue
			}
			cs.TimeIndex = identText(text, toks[elemStart:elemStart+1])
			cuts = append(cuts, cut{t.start, toks[i+1].end, ""})
			i++
			continue
		}
		if depth == 0 && t.text == "engine" && i+2 < len(toks) && toks[i+1].text == "=" {
			gcuts = append(gcuts, cut{t.start, toks[i+2].end, ""})
			i += 2
			continue
		}
		if depth == 1 && t.text == "watermark" && i+1 < len(toks) && toks[i+1].text == "for" {
			// WATERMARK FOR col AS expr, up to the next top-level comma or
			// the closing parenthesis of the column list.
			j, d := i, 1
			for j < len(toks) {
				if toks[j].text == "(" {
					d++
				} else if toks[j].text == ")" {
					d--
					if d == 0 {
						break
					}
				} else if toks[j].text == "," && d == 1 {
					break
				}
				j++
			}
			if j >= len(toks) {
				return nil, false, nil
			}
			start, end := t.start, toks[j-1].end
			wmText = text[start:end]
			// Remove the element and one adjacent comma.
			if toks[i-1].text == "," {
				start = toks[i-1].start
			} else if toks[j].text == "," {
				end = toks[j].end
			}
			cuts = append(cuts, cut{start, end, ""})
			i = j - 1
			continue
		}
		if depth == 0 && !cs.IsSource && t.text == "from" {
			// FROM source TABLE 'schema.table'
			j := i + 1
			for j+2 < len(toks) && toks[j+1].text == "." {
				j += 2
			}
			if j+2 >= len(toks) || toks[j+1].text != "table" || !strings.HasPrefix(toks[j+2].text, "'") {
				return nil, false, nil
			}
			cs.FromSource = identText(text, toks[i+1:j+1])
			cs.FromTable = strings.ReplaceAll(strings.Trim(text[toks[j+2].start:toks[j+2].end], "'"), "''", "'")
			cuts = append(cuts, cut{t.start, toks[j+2].end, ""})
			i = j + 2
			continue
		}
		if depth == 0 && t.text == "append" && i+1 < len(toks) && toks[i+1].text == "only" {
			cs.AppendOnly = true
			cuts = append(cuts, cut{t.start, toks[i+1].end, ""})
			i++
			continue
		}
		if depth == 0 && t.text == "include" && i+1 < len(toks) {
			inc := Include{Kind: toks[i+1].text}
			j := i + 2
			if inc.Kind == "header" && j < len(toks) && strings.HasPrefix(toks[j].text, "'") {
				inc.Header = strings.Trim(text[toks[j].start:toks[j].end], "'")
				j++
			}
			if j+1 < len(toks) && toks[j].text == "as" {
				inc.Column = toks[j+1].text
				if strings.HasPrefix(inc.Column, `"`) {
					inc.Column = strings.Trim(text[toks[j+1].start:toks[j+1].end], `"`)
				}
				j += 2
			}
			cs.Includes = append(cs.Includes, inc)
			cuts = append(cuts, cut{t.start, toks[j-1].end, ""})
			i = j - 1
			continue
		}
		if depth == 0 && t.text == "format" && i+3 < len(toks) && toks[i+2].text == "encode" {
			cs.Format = strings.ToUpper(toks[i+1].text)
			cs.Encode = strings.ToUpper(toks[i+3].text)
			end := toks[i+3].end
			j := i + 4
			if j < len(toks) && toks[j].text == "(" {
				opts, n := encodeOptions(text, toks[j:])
				if n < 0 {
					return nil, false, nil
				}
				cs.EncodeOptions = opts
				j += n
				end = toks[j-1].end
			}
			cuts = append(cuts, cut{t.start, end, ""})
			i = j - 1
		}
	}
	if cs.TimeIndex != "" {
		cuts = append(cuts, gcuts...)
	}
	if len(commaCuts) > 0 && (cs.IsSource || len(cuts) > 0 || hasToken(toks, "connector")) {
		cuts = append(cuts, commaCuts...)
	}
	slices.SortFunc(cuts, func(a, b cut) int { return a.start - b.start })
	if !cs.IsSource && len(cuts) == 0 {
		return nil, false, nil // a plain CREATE TABLE: pg_query's
	}
	var b strings.Builder
	b.WriteString(text[:toks[1].start])
	b.WriteString(text[toks[1].start:toks[1].end])
	if cs.IsSource {
		b.Reset()
		b.WriteString(text[:toks[1].start])
		b.WriteString("TABLE")
	}
	pos := toks[1].end
	for _, c := range cuts {
		b.WriteString(text[pos:c.start])
		b.WriteString(c.repl)
		pos = c.end
	}
	b.WriteString(text[pos:])
	cs.Text = b.String()
	tree, err := parseTree(cs.Text)
	if err != nil || len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetCreateStmt() == nil {
		return nil, false, nil
	}
	cs.Create = tree.Stmts[0].Stmt.GetCreateStmt()
	if wmText != "" {
		wm, err := parseWatermark(wmText)
		if err != nil {
			return nil, true, err
		}
		cs.Watermark = wm
	}
	return cs, true, nil
}

// greptimeType reports, for the column definition whose type is the
// token at i, GreptimeDB's type names that PostgreSQL lacks: STRING is
// TEXT, DOUBLE (without PRECISION) is DOUBLE PRECISION.
func greptimeType(text string, toks []tok, i int, add func(cut)) {
	if i >= len(toks) {
		return
	}
	switch toks[i].text {
	case "string":
		add(cut{toks[i].start, toks[i].end, "TEXT"})
	case "double":
		if i+1 >= len(toks) || toks[i+1].text != "precision" {
			add(cut{toks[i].start, toks[i].end, "DOUBLE PRECISION"})
		}
	}
}

// cut is a byte range of a statement's text replaced by repl.
type cut struct {
	start, end int
	repl       string
}

var dropSourceRE = regexp.MustCompile(`(?is)^drop\s+source\b`)

// dropSourceAsForeignTable turns DROP SOURCE into pg_query's DROP FOREIGN
// TABLE (a source is PostgreSQL's closest object; the binder maps it back
// to a source).
func dropSourceAsForeignTable(text string) string {
	if loc := dropSourceRE.FindStringIndex(text); loc != nil {
		return "DROP FOREIGN TABLE" + text[loc[1]:]
	}
	return text
}

// nameEnd is the index of the last token of the relation name of CREATE
// TABLE|SOURCE [IF NOT EXISTS] name, or -1.
func nameEnd(toks []tok) int {
	i := 2
	if i+2 < len(toks) && toks[i].text == "if" && toks[i+1].text == "not" && toks[i+2].text == "exists" {
		i += 3
	}
	if i >= len(toks) {
		return -1
	}
	for i+2 < len(toks) && toks[i+1].text == "." {
		i += 2
	}
	return i
}

// identText is a possibly qualified name's text: quoted parts keep their
// case, others are lower-cased.
func identText(text string, toks []tok) string {
	var b strings.Builder
	for _, t := range toks {
		raw := text[t.start:t.end]
		if strings.HasPrefix(raw, `"`) {
			b.WriteString(strings.ReplaceAll(strings.Trim(raw, `"`), `""`, `"`))
		} else {
			b.WriteString(t.text)
		}
	}
	return b.String()
}

// encodeOptions reads ( k = 'v', ... ) from toks; n is the number of
// tokens used, -1 when malformed.
func encodeOptions(text string, toks []tok) (map[string]string, int) {
	opts := map[string]string{}
	i := 1
	for i < len(toks) {
		if toks[i].text == ")" {
			return opts, i + 1
		}
		// key: ident(.ident)*
		k := i
		for k+2 < len(toks) && toks[k+1].text == "." {
			k += 2
		}
		if k+2 >= len(toks) || toks[k+1].text != "=" {
			return nil, -1
		}
		key := strings.ReplaceAll(text[toks[i].start:toks[k].end], `"`, "")
		v := text[toks[k+2].start:toks[k+2].end]
		opts[strings.ToLower(key)] = strings.Trim(v, "'")
		i = k + 3
		if i < len(toks) && toks[i].text == "," {
			i++
		}
	}
	return nil, -1
}

func parseWatermark(s string) (*Watermark, error) {
	// "WATERMARK FOR col AS expr": parse expr with pg_query.
	rest := strings.TrimSpace(s[len("watermark"):])
	rest = strings.TrimSpace(rest[len("for"):])
	i := strings.IndexAny(rest, " \t\n")
	if i < 0 {
		return nil, syntaxErrorf("syntax error in WATERMARK clause")
	}
	col := rest[:i]
	rest = strings.TrimSpace(rest[i:])
	if len(rest) < 2 || !strings.EqualFold(rest[:2], "as") {
		return nil, syntaxErrorf("syntax error in WATERMARK clause: expected AS")
	}
	exprText := rest[2:]
	tree, err := parseTree("SELECT " + exprText)
	if err != nil || len(tree.Stmts) != 1 {
		return nil, syntaxErrorf("syntax error in WATERMARK expression")
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 || len(sel.FromClause) > 0 {
		return nil, syntaxErrorf("syntax error in WATERMARK expression")
	}
	if strings.HasPrefix(col, `"`) {
		col = strings.Trim(col, `"`)
	} else {
		col = strings.ToLower(col)
	}
	return &Watermark{Column: col, Expr: sel.TargetList[0].GetResTarget().Val, Text: strings.TrimSpace(exprText)}, nil
}

// hasToken reports whether some token is word.
func hasToken(toks []tok, word string) bool {
	for _, t := range toks {
		if t.text == word {
			return true
		}
	}
	return false
}
