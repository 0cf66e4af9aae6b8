package frontend

import (
	"strings"

	"github.com/runneldb/runnel/internal/catalog"
	"github.com/runneldb/runnel/internal/sqlerr"
)

// integrityErrorObject names the table (and its schema) in an
// integrity-constraint error (class 23) raised by a write to rel, as
// PostgreSQL does, so that drivers can tell which table a unique or
// not-null violation is about. Other errors are returned unchanged.
func (ss *session) integrityErrorObject(err error, rel *catalog.Relation) error {
	e := sqlerr.From(err)
	if e == nil || rel == nil || !strings.HasPrefix(e.Code, "23") || e.TableName != "" {
		return err
	}
	c := *e
	c.TableName = rel.Name
	for _, s := range ss.s.catalog.Schemas(ss.db.ID) {
		if s.ID == rel.SchemaID {
			c.SchemaName = s.Name
		}
	}
	return &c
}
