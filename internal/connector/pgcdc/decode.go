package pgcdc

import (
	"fmt"
	"slices"

	"github.com/jackc/pglogrepl"

	"github.com/runneldb/runnel/internal/types"
)

// decoder turns pgoutput messages about the reader's table into Changes.
type decoder struct {
	r *Reader
	// rel is the upstream table's relation id (0 until its Relation
	// message); cols maps each of its columns to the Runnel column it
	// feeds (-1: none).
	rel  uint32
	cols []int
	// known are the upstream columns seen so far, to report additions.
	known []string
	// commitTime is the current transaction's commit time, for the
	// INCLUDE timestamp column.
	commitTime types.Datum
}

// apply appends m's changes to out.
func (d *decoder) apply(m pglogrepl.Message, out []Change) []Change {
	switch m := m.(type) {
	case *pglogrepl.RelationMessage:
		if m.Namespace == d.r.cfg.Schema && m.RelationName == d.r.cfg.Table {
			d.relation(m)
		}
	case *pglogrepl.InsertMessage:
		if m.RelationID == d.rel && d.rel != 0 {
			if row, _, ok := d.row(m.Tuple, nil); ok {
				out = append(out, Change{Op: OpUpsert, Row: row})
				d.r.Changes.Add(1)
			}
		}
	case *pglogrepl.UpdateMessage:
		if m.RelationID == d.rel && d.rel != 0 {
			out = d.update(m, out)
		}
	case *pglogrepl.DeleteMessage:
		if m.RelationID == d.rel && d.rel != 0 {
			if row, _, ok := d.row(m.OldTuple, nil); ok {
				out = append(out, Change{Op: OpDelete, Row: row})
				d.r.Changes.Add(1)
			}
		}
	case *pglogrepl.TruncateMessage:
		if d.rel != 0 && slices.Contains(m.RelationIDs, d.rel) {
			out = append(out, Change{Op: OpTruncate})
			d.r.Changes.Add(1)
		}
	}
	return out
}

// relation maps the upstream columns to the Runnel table's by name, and
// reports columns added or dropped upstream since the reader last saw the
// table. An added column the Runnel table declares (ahead of the upstream
// ALTER TABLE ... ADD COLUMN) is fed from then on; one it does not declare
// is ignored, as when the table was created with a subset of the columns,
// and reported; a Runnel column missing upstream is NULL. Reports go to
// the log and to Status.Notices, which rw_catalog.rw_source_stats shows.
func (d *decoder) relation(m *pglogrepl.RelationMessage) {
	d.rel = m.RelationID
	d.cols = make([]int, len(m.Columns))
	names := make([]string, len(m.Columns))
	for i, c := range m.Columns {
		names[i] = c.Name
		d.cols[i] = -1
		for j, rc := range d.r.cols {
			if rc.Name == c.Name && !rc.CommitTime {
				d.cols[i] = j
			}
		}
	}
	var notes []string
	if d.known != nil {
		for i, n := range names {
			switch {
			case slices.Contains(d.known, n):
			case d.cols[i] >= 0:
				// The Runnel table declared it ahead: applied from now on.
				d.r.opt.Logger.Info("postgres-cdc: column added upstream is applied", "table", d.r.opt.Name, "upstream", d.r.cfg.TableName(), "column", n)
			default:
				notes = append(notes, fmt.Sprintf("column %q was added to upstream table %s; the Runnel table %s does not store it (its columns are unchanged)", n, d.r.cfg.TableName(), d.r.opt.Name))
			}
		}
	}
	for _, rc := range d.r.cols {
		if !rc.CommitTime && !slices.Contains(names, rc.Name) {
			notes = append(notes, fmt.Sprintf("column %q is not in upstream table %s; the Runnel table %s stores NULL for it until it is added there", rc.Name, d.r.cfg.TableName(), d.r.opt.Name))
		}
	}
	d.known = names
	for _, n := range notes {
		d.r.opt.Logger.Warn("postgres-cdc: upstream schema change", "table", d.r.opt.Name, "change", n)
	}
	if len(notes) > 0 {
		d.r.setStatus(func(s *Status) {
			for _, n := range notes {
				if !slices.Contains(s.Notices, n) {
					s.Notices = append(s.Notices, n)
				}
			}
		})
	}
}

// row converts a tuple to a Runnel row. keep marks the columns PostgreSQL
// left out as unchanged TOAST; a column whose value comes from fill (the
// old tuple of a FULL replica identity) is not kept. ok is false when a key
// column did not parse (the change is skipped and counted).
func (d *decoder) row(t *pglogrepl.TupleData, fill types.Row) (row types.Row, keep []bool, ok bool) {
	if t == nil {
		d.r.BadRows.Add(1)
		return nil, nil, false
	}
	row = make(types.Row, len(d.r.cols))
	if j := d.r.commitCol; j >= 0 {
		row[j] = d.commitTime
	}
	for i, c := range t.Columns {
		if i >= len(d.cols) || d.cols[i] < 0 {
			continue
		}
		j := d.cols[i]
		switch c.DataType {
		case pglogrepl.TupleDataTypeText:
			v, good := d.r.parse(j, c.Data)
			if !good && d.r.isKey(j) {
				d.r.BadRows.Add(1)
				return nil, nil, false
			}
			row[j] = v
		case pglogrepl.TupleDataTypeToast:
			if fill != nil && !fill[j].IsNull() {
				row[j] = fill[j]
				continue
			}
			if keep == nil {
				keep = make([]bool, len(row))
			}
			keep[j] = true
		case pglogrepl.TupleDataTypeBinary:
			d.r.BadValues.Add(1) // never requested
		}
	}
	return row, keep, true
}

func (d *decoder) update(m *pglogrepl.UpdateMessage, out []Change) []Change {
	var old types.Row
	if m.OldTuple != nil {
		o, _, ok := d.row(m.OldTuple, nil)
		if !ok {
			return out
		}
		old = o
	}
	var fill types.Row
	if m.OldTupleType == pglogrepl.UpdateMessageTupleTypeOld {
		fill = old // FULL: the old tuple has every column
	}
	row, keep, ok := d.row(m.NewTuple, fill)
	if !ok {
		return out
	}
	c := Change{Op: OpUpsert, Row: row, Keep: keep}
	if old != nil && !d.sameKey(old, row) {
		c.Old = old // the key changed: the old key's row goes away
	}
	d.r.Changes.Add(1)
	return append(out, c)
}

func (d *decoder) sameKey(a, b types.Row) bool {
	for _, k := range d.r.pk {
		if a[k].IsNull() != b[k].IsNull() || !types.Equal(a[k], b[k]) {
			return false
		}
	}
	return true
}
