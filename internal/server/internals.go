package server

import (
	"github.com/runneldb/runnel/internal/meta"
	"github.com/runneldb/runnel/internal/metastore"
	"github.com/runneldb/runnel/internal/objstore"
	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/stream"
)

// Internals are the parts of a running server that tests in other packages
// drive directly: recovery, GC and benchmark tests run compaction and GC,
// install storage test hooks, inspect actors and read recovery records.
// Production code never uses them.
type Internals struct {
	Store   *storage.Engine
	Objects objstore.Store
	Meta    *metastore.DB
	Epochs  *meta.BarrierLoop
	Actors  *stream.BarrierManager
}

// Internals returns the server's parts (see Internals).
func (s *Server) Internals() Internals {
	return Internals{Store: s.store, Objects: s.objects, Meta: s.metaDB, Epochs: s.epochs, Actors: s.actors}
}
