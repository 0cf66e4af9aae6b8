package types

import "strings"

// Row is a tuple of values. Rows are not shared between goroutines while
// mutable; an executor that keeps a row it received must not mutate it.
type Row []Datum

func (r Row) String() string {
	var b strings.Builder
	b.WriteByte('(')
	for i, d := range r {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.String())
	}
	b.WriteByte(')')
	return b.String()
}

// Copy returns a shallow copy (datums are immutable values).
func (r Row) Copy() Row { return append(Row(nil), r...) }

// Op is the change a stream row carries.
type Op uint8

const (
	OpInsert Op = iota
	OpDelete
	// An update is a pair of adjacent rows: UpdateDelete (old) immediately
	// followed by UpdateInsert (new), kept together so that downstream
	// executors can treat it as one change when the key did not move.
	OpUpdateDelete
	OpUpdateInsert
)

func (o Op) String() string {
	switch o {
	case OpInsert:
		return "+"
	case OpDelete:
		return "-"
	case OpUpdateDelete:
		return "U-"
	case OpUpdateInsert:
		return "U+"
	}
	return "?"
}

// IsInsert reports whether the op adds its row (Insert or UpdateInsert).
func (o Op) IsInsert() bool { return o == OpInsert || o == OpUpdateInsert }

// Chunk is a batch of changes: Ops[i] applies to Rows[i].
type Chunk struct {
	Ops  []Op
	Rows []Row
}

func (c *Chunk) Len() int { return len(c.Rows) }

// Append adds one change.
func (c *Chunk) Append(op Op, r Row) {
	c.Ops = append(c.Ops, op)
	c.Rows = append(c.Rows, r)
}

// Reset empties the chunk, keeping its capacity.
func (c *Chunk) Reset() {
	clear(c.Rows)
	c.Ops = c.Ops[:0]
	c.Rows = c.Rows[:0]
}
