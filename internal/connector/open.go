package connector

import (
	"strings"
	"time"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// SplitReader produces one split's rows in position order.
type SplitReader interface {
	// NextChunk appends up to max fresh rows to c as inserts and returns
	// how many it appended.
	NextChunk(c *types.Chunk, max int) int
	// Position is the position of the next row; persisting it at a
	// checkpoint and reopening there resumes exactly.
	Position() int64
	// Done reports whether a bounded stream has no rows left.
	Done() bool
}

// Source is a configured connector.
type Source interface {
	// Splits is the number of parallel splits.
	Splits() int
	// StartPosition is the position of a split that produced nothing yet.
	StartPosition(split int) int64
	// Open returns the reader of split resuming at position.
	Open(split int, position int64) (SplitReader, error)
	// Gap is the wall-clock time between rows of one split (0: unthrottled).
	Gap() time.Duration
	// MaxChunk bounds the rows per chunk.
	MaxChunk() int
}

// Factory builds a connector from its WITH options and the relation's
// columns.
type Factory func(columns []Column, options map[string]string) (Source, error)

var factories = map[string]Factory{}

// Register adds a connector under name (called from each connector
// package's init).
func Register(name string, f Factory) { factories[name] = f }

// Open builds the connector named by options["connector"].
func Open(columns []Column, options map[string]string) (Source, error) {
	name := strings.ToLower(options["connector"])
	f := factories[name]
	if f == nil {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "connector %q is not supported (supported: nexmark, datagen)", name)
	}
	return f(columns, options)
}
