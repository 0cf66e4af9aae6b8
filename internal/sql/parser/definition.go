package parser

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Stored definitions (a view's query, a column's DEFAULT, a WATERMARK
// expression) are slices of the user's own text, never pg_query's Deparse
// of a tree: Deparse is C code that trusts its input tree, and a tree the
// binder built or changed (an unaliased subquery in FROM given an empty
// alias) made it dereference NULL and kill the process (issue 13; I9).
// Each slice is checked by parsing it again and comparing the trees.

// significant returns text's tokens without comments.
func significant(text string) []*pg_query.ScanToken {
	res, err := pg_query.Scan(text)
	if err != nil {
		return nil
	}
	out := res.Tokens[:0]
	for _, t := range res.Tokens {
		if t.Token != pg_query.Token_SQL_COMMENT && t.Token != pg_query.Token_C_COMMENT {
			out = append(out, t)
		}
	}
	return out
}

// ViewQueryText returns the defining query of a CREATE [OR REPLACE]
// [MATERIALIZED] VIEW statement (possibly under EXPLAIN): the text after
// the first AS outside parentheses, without a trailing WITH [NO] DATA or
// WITH [CASCADED | LOCAL] CHECK OPTION. ok is false when there is no such
// AS.
func ViewQueryText(text string) (query string, ok bool) {
	toks := significant(text)
	start := afterKeyword(toks, pg_query.Token_AS, false)
	if start < 0 {
		return "", false
	}
	end := len(toks)
	is := func(i int, want pg_query.Token) bool { return i >= start && i < end && toks[i].Token == want }
	switch {
	case is(end-2, pg_query.Token_WITH) && is(end-1, pg_query.Token_DATA_P):
		end -= 2
	case is(end-3, pg_query.Token_WITH) && is(end-2, pg_query.Token_NO) && is(end-1, pg_query.Token_DATA_P):
		end -= 3
	case is(end-3, pg_query.Token_WITH) && is(end-2, pg_query.Token_CHECK) && is(end-1, pg_query.Token_OPTION):
		end -= 3
	case is(end-4, pg_query.Token_WITH) && (is(end-3, pg_query.Token_CASCADED) || is(end-3, pg_query.Token_LOCAL)) &&
		is(end-2, pg_query.Token_CHECK) && is(end-1, pg_query.Token_OPTION):
		end -= 4
	}
	if end <= start {
		return "", false
	}
	return text[toks[start].Start:toks[end-1].End], true
}

// ColumnExprText returns the text of the expression that follows the
// keyword at byte offset from in text (DEFAULT in a column definition, or
// CONSTRAINT name DEFAULT): up to the first comma or unmatched closing
// parenthesis or COLLATE outside parentheses, and before byte offset limit (the next
// constraint of the column; -1 for none).
func ColumnExprText(text string, from, limit int) (string, bool) {
	if from < 0 || from > len(text) {
		return "", false
	}
	toks := significant(text[from:])
	i := 0
	for i < len(toks) && toks[i].Token != pg_query.Token_DEFAULT {
		i++
	}
	i++ // past DEFAULT
	start, end := i, i
	depth := 0
	for ; end < len(toks); end++ {
		t := toks[end]
		if limit >= 0 && from+int(t.Start) >= limit {
			break
		}
		switch t.Token {
		case pg_query.Token_ASCII_40, pg_query.Token_ASCII_91:
			depth++
		case pg_query.Token_ASCII_41, pg_query.Token_ASCII_93:
			depth--
		}
		// A DEFAULT is a b_expr: COLLATE outside parentheses belongs to
		// the column, not to the expression.
		if depth < 0 || depth == 0 && (t.Token == pg_query.Token_ASCII_44 || t.Token == pg_query.Token_COLLATE) {
			break
		}
	}
	if start >= end {
		return "", false
	}
	return text[from+int(toks[start].Start) : from+int(toks[end-1].End)], true
}

// SameTree reports whether two parse trees are equal apart from their
// source locations.
func SameTree(a, b proto.Message) bool {
	a, b = proto.Clone(a), proto.Clone(b)
	clearLocations(a.ProtoReflect())
	clearLocations(b.ProtoReflect())
	return proto.Equal(a, b)
}

// clearLocations zeroes every "location" field under m. The depth of the
// recursion is the tree's, which parsing bounds (see checkNesting).
func clearLocations(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Name() == "location" && fd.Kind() == protoreflect.Int32Kind:
			m.Clear(fd)
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				clearLocations(l.Get(i).Message())
			}
		case fd.IsMap():
		case fd.Kind() == protoreflect.MessageKind:
			clearLocations(v.Message())
		}
		return true
	})
}

// FunctionReturnText returns the expression of a CREATE FUNCTION ...
// RETURN expr statement: the text after the last RETURN keyword outside
// parentheses. ok is false when there is none.
func FunctionReturnText(text string) (expr string, ok bool) {
	toks := significant(text)
	start := afterKeyword(toks, pg_query.Token_RETURN, true)
	if start < 0 {
		return "", false
	}
	return text[toks[start].Start:toks[len(toks)-1].End], true
}

// afterKeyword returns the index of the token after the first (or, with
// last, the last) keyword kw outside parentheses that some token follows;
// -1 when there is none.
func afterKeyword(toks []*pg_query.ScanToken, kw pg_query.Token, last bool) int {
	depth, start := 0, -1
	for i, t := range toks {
		switch t.Token {
		case pg_query.Token_ASCII_40:
			depth++
		case pg_query.Token_ASCII_41:
			depth--
		case kw:
			if depth == 0 && i+1 < len(toks) {
				start = i + 1
				if !last {
					return start
				}
			}
		}
	}
	return start
}
