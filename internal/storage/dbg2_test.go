package storage
import "github.com/runneldb/runnel/internal/objstore"
func objstoreNewMem() *objstore.Mem { return objstore.NewMem() }
