package cluster_test

import (
	"path/filepath"
	"testing"

	"github.com/runneldb/runnel/internal/cluster"
	"github.com/runneldb/runnel/internal/metastore"
)

// BenchmarkCommit measures what the fence adds to a small metastore
// commit (one upsert) on SQLite: sub-benchmarks unfenced and fenced.
//
//	go test -run '^$' -bench BenchmarkCommit ./internal/cluster/
func BenchmarkCommit(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		name := "unfenced"
		if fenced {
			name = "fenced"
		}
		b.Run(name, func(b *testing.B) {
			db, err := metastore.Open(bg, filepath.Join(b.TempDir(), "meta.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if err := cluster.Migrate(bg, db); err != nil {
				b.Fatal(err)
			}
			if _, err := db.Exec(bg, `CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER)`); err != nil {
				b.Fatal(err)
			}
			if fenced {
				l := cluster.NewLeader(cluster.LeaderConfig{DB: db, Holder: "bench"})
				if _, _, err := l.TryAcquire(bg, false); err != nil {
					b.Fatal(err)
				}
				if err := l.Prepare(bg); err != nil {
					b.Fatal(err)
				}
				db.SetFence(l.Fence)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := db.Tx(bg, func(tx *metastore.Tx) error {
					_, err := tx.Exec(bg, `INSERT INTO kv (k, v) VALUES (1, $1) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, i)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
