package sinktest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestKafkaUpsertSink: an upsert sink FORMAT UPSERT ENCODE JSON from an
// aggregation view into an in-process Kafka broker (kfake, the real
// protocol over TCP); after seeded random DML and a RECOVER, the topic
// deduplicated by key (the last value wins, a null value deletes) equals
// the view. A FORMAT PLAIN sink from an append-only table carries every
// row once.
func TestKafkaUpsertSink(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 5))
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "agg", "ev"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE t (k int PRIMARY KEY, g int, v int)")
	mustExec(t, rw, "CREATE TABLE ev (id int, v int) APPEND ONLY")
	randomDML(t, rw, r, 20, 40)
	mustExec(t, rw, "CREATE MATERIALIZED VIEW mv AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK agg_sink FROM mv WITH (connector = 'kafka', properties.bootstrap.server = '%s',
		topic = 'agg', type = 'upsert', primary_key = 'g') FORMAT UPSERT ENCODE JSON`, addr))
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK ev_sink FROM ev WITH (connector = 'kafka', properties.bootstrap.server = '%s',
		topic = 'ev', type = 'append-only') FORMAT PLAIN ENCODE JSON`, addr))
	for round := 0; round < 3; round++ {
		randomDML(t, rw, r, 30, 40)
		mustExec(t, rw, fmt.Sprintf("INSERT INTO ev SELECT i, i FROM generate_series(%d, %d) g(i)", round*100, round*100+99))
		if round == 1 {
			mustExec(t, rw, "FLUSH")
			mustExec(t, rw, "RECOVER")
		}
	}
	mustExec(t, rw, "FLUSH")
	want := rowsOf(t, rw, "SELECT g, n, s FROM mv")
	wantEv := rowsOf(t, rw, "SELECT id, v FROM ev")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("agg", "ev"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	byKey := map[string]string{}
	var ev []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		fctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(fctx)
		cancel()
		fs.EachRecord(func(rec *kgo.Record) {
			switch rec.Topic {
			case "agg":
				if rec.Value == nil {
					delete(byKey, string(rec.Key))
					return
				}
				var m struct{ G, N, S *int64 }
				if err := json.Unmarshal(rec.Value, &m); err != nil {
					t.Fatalf("value %s: %v", rec.Value, err)
				}
				f := func(p *int64) string {
					if p == nil {
						return "NULL"
					}
					return fmt.Sprint(*p)
				}
				byKey[string(rec.Key)] = f(m.G) + "|" + f(m.N) + "|" + f(m.S)
			case "ev":
				var m struct{ ID, V int64 }
				if err := json.Unmarshal(rec.Value, &m); err != nil {
					t.Fatalf("value %s: %v", rec.Value, err)
				}
				ev = append(ev, fmt.Sprintf("%d|%d", m.ID, m.V))
			}
		})
		var got []string
		for _, v := range byKey {
			got = append(got, v)
		}
		slices.Sort(got)
		gotEv := slices.Clone(ev)
		slices.Sort(gotEv)
		if slices.Equal(got, want) && slices.Equal(gotEv, wantEv) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic agg deduplicated by key: %v\nview: %v\ntopic ev: %d records, table: %d rows", head(got), head(want), len(gotEv), len(wantEv))
		}
	}
}
