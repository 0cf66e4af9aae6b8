package connector

import "github.com/runneldb/runnel/internal/types"

// Column is one column a connector produces (or, for datagen, is asked to
// produce): the schema CREATE SOURCE / CREATE TABLE ... WITH (connector = ...)
// declares.
type Column struct {
	Name string
	Type types.Type
}
