package plan

import (
	"strconv"
	"sync/atomic"
)

var lastWorkID atomic.Int64

// NewWorkID returns a RecursiveUnion id no other plan in this process uses
// (a view expanded into a query brings its own recursive queries).
func NewWorkID() int { return int(lastWorkID.Add(1)) }

// RecursiveUnion is WITH RECURSIVE r AS (base UNION [ALL] recursive): the
// rows of Base, then those of Recursive evaluated over the rows the
// previous step produced (read by its WorkTable leaf with the same ID),
// until a step produces none. Without All, a row already produced is not
// produced again (and does not feed the next step), as in PostgreSQL.
// Only the batch engine runs it: a recursive query is not maintained
// incrementally.
type RecursiveUnion struct {
	Base, Recursive Node
	All             bool
	WorkID          int
	Out             Schema
}

// WorkTable reads the rows the previous step of the RecursiveUnion WorkID
// produced: the recursive reference to the query inside its own definition.
type WorkTable struct {
	WorkID int
	Name   string
	Out    Schema
}

func (n *RecursiveUnion) Schema() Schema   { return n.Out }
func (n *RecursiveUnion) Children() []Node { return []Node{n.Base, n.Recursive} }
func (n *RecursiveUnion) Describe() string {
	if n.All {
		return "RecursiveUnion all"
	}
	return "RecursiveUnion"
}

func (n *WorkTable) Schema() Schema   { return n.Out }
func (n *WorkTable) Children() []Node { return nil }
func (n *WorkTable) Describe() string {
	return "WorkTableScan " + n.Name + " (step " + strconv.Itoa(n.WorkID) + ")"
}
