package binder

import (
	pg "github.com/pganalyze/pg_query_go/v6"
)

// bindOther binds statements other than queries (DDL, DML, utility).
func (b *Binder) bindOther(n *pg.Node) (Statement, bool, error) {
	return nil, false, nil
}
