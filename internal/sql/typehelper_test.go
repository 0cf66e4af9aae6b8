package sql

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/runneldb/runnel/internal/sql/binder"
	"github.com/runneldb/runnel/internal/types"
)

func resolveType(tc *pg.TypeCast) (types.Type, error) { return binder.ResolveTypeName(tc.TypeName) }
