package binder

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// exprFeatureNames names, for users, the PostgreSQL expression kinds the
// binder does not support; others are named by their parse-node type.
var exprFeatureNames = map[string]string{
	"XmlExpr":               "XML functions",
	"XmlSerialize":          "XMLSERIALIZE",
	"AIndirection":          "subscripts and field selection",
	"MultiAssignRef":        "multiple-column assignment",
	"JsonObjectConstructor": "JSON_OBJECT",
	"JsonArrayConstructor":  "JSON_ARRAY",
	"JsonIsPredicate":       "IS JSON",
	"SetToDefault":          "DEFAULT in this position",
}

// unsupportedExpr is the 0A000 error for an expression the binder cannot
// bind; it names the feature so the user knows what to rewrite.
func unsupportedExpr(n *pg.Node) error {
	kind := fmt.Sprintf("%T", n.GetNode())
	kind = strings.TrimPrefix(kind[strings.LastIndex(kind, ".")+1:], "Node_")
	if name, ok := exprFeatureNames[kind]; ok {
		kind = name
	}
	return unsupported("%s is not supported", kind)
}
