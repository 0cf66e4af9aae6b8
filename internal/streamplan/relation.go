package streamplan

import (
	"fmt"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/stream/state"
)

// TableStateSchema is the state-table schema of a table's rows.
func TableStateSchema(rel *catalog.Relation) state.Schema {
	s := state.Schema{
		Name:           fmt.Sprintf("table %s (state table %d)", rel.Name, rel.StateTable),
		PK:             rel.PK,
		DistKey:        rel.DistKey,
		ConstraintName: rel.Name + "_pkey",
	}
	for _, c := range rel.Columns {
		s.Types = append(s.Types, c.Type)
		s.ColumnNames = append(s.ColumnNames, c.Name)
	}
	return s
}

// ViewStateSchema is the state-table schema of a materialized view's rows.
func ViewStateSchema(rel *catalog.Relation) state.Schema {
	st := TableStateSchema(rel)
	st.Name = fmt.Sprintf("%s %s (state table %d)", rel.Kind, rel.Name, rel.StateTable)
	if rel.Index != nil {
		st.Desc = rel.Index.KeyDesc(len(rel.PK))
	}
	return st
}

// ConnectorColumns are the columns a connector produces for rel: the
// visible ones (a hidden row id is appended by the ingest).
func ConnectorColumns(rel *catalog.Relation) []connector.Column {
	var cols []connector.Column
	for _, c := range rel.Columns {
		if !c.Hidden {
			cols = append(cols, connector.Column{Name: c.Name, Type: c.Type})
		}
	}
	return cols
}
