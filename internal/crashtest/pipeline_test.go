package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// defaultPipelineKills is the number of SIGKILLs of
// TestKafkaViewSinksSIGKILL in the default run.
const defaultPipelineKills = 3

// targetDownKills are the further kills while the PostgreSQL target is
// down.
const targetDownKills = 2

// TestKafkaViewSinksSIGKILL (I7, I8 end to end): a Kafka topic of three
// partitions (kfake in this test process) feeds a source; a view
// aggregates it by group; two sinks drain the view: an upsert jdbc sink
// into a PostgreSQL table and an upsert kafka sink with is_exactly_once
// into a topic. A producer writes ids 1, 2, 3, ... all along while the
// Runnel subprocess is SIGKILLed at seeded random moments (sometimes again
// during its recovery) and restarted; then the PostgreSQL target crashes
// and stays down for two more kills before it restarts. After catch-up:
//   - the view equals what PostgreSQL computes over the produced input
//     (loaded into a table there), so no record was lost or read twice;
//   - the PostgreSQL target equals it too: the sink's rows commit with its
//     progress row, so no epoch was applied twice or skipped;
//   - the Kafka topic, read with read_committed, holds each change once:
//     per group the counts of its records rise strictly (an epoch produced
//     twice would repeat one; count(*) of a group of an append-only source
//     only grows) and the last record of each group is the view's row.
//
// RUNNEL_PIPELINE_CRASH_KILLS sets the kills (default 3).
func TestKafkaViewSinksSIGKILL(t *testing.T) {
	c := newSourceCrash(t)
	kills := int(envInt(t, "RUNNEL_PIPELINE_CRASH_KILLS", defaultPipelineKills))
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "ev"), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addr := broker.ListenAddrs()[0]
	ctx := context.Background()
	// The target has a cluster of its own, crashed for the last kills.
	cluster, err := pgtest.StartCluster("")
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop()
	targetURL := cluster.URL("postgres")
	pg, err := pgx.Connect(ctx, targetURL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { pg.Close(ctx) }()
	if _, err := pg.Exec(ctx, "CREATE TABLE agg (g int PRIMARY KEY, n bigint, s bigint)"); err != nil {
		t.Fatal(err)
	}
	pc, err := pgx.ParseConfig(targetURL)
	if err != nil {
		t.Fatal(err)
	}
	jdbc := fmt.Sprintf("jdbc:postgresql://%s:%d/%s?user=%s", pc.Host, pc.Port, pc.Database, pc.User)

	const groups = 13
	prod := newIDProducer(t, addr, "ev", 3, func(id int64) []byte {
		return fmt.Appendf(nil, `{"id": %d, "g": %d, "v": %d}`, id, id%groups, id%101)
	})
	if err := prod.produce(300); err != nil {
		t.Fatal(err)
	}
	conn := c.connect()
	for _, s := range []string{
		fmt.Sprintf(`CREATE SOURCE ks (id BIGINT, g INT, v INT) WITH (connector = 'kafka', topic = 'ev', properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE JSON`, addr),
		`CREATE MATERIALIZED VIEW mv AS SELECT g, count(*) AS n, sum(v) AS s FROM ks GROUP BY g`,
		fmt.Sprintf(`CREATE SINK pg_sink FROM mv WITH (connector = 'jdbc', jdbc.url = '%s', table.name = 'agg', type = 'upsert', primary_key = 'g')`, jdbc),
		fmt.Sprintf(`CREATE SINK k_sink FROM mv WITH (connector = 'kafka', properties.bootstrap.server = '%s', topic = 'out',
			type = 'upsert', primary_key = 'g', is_exactly_once = 'true') FORMAT UPSERT ENCODE JSON`, addr),
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}

	n := prod.during(c.seed, func() {
		c.killLoop(kills)
		// The target goes down for a while: the sink's backlog waits in
		// its log store across more kills and drains once it is back.
		if err := cluster.Crash(); err != nil {
			t.Fatal(err)
		}
		t.Log("target PostgreSQL crashed")
		c.killLoop(targetDownKills)
		if err := cluster.Restart(); err != nil {
			t.Fatal(err)
		}
		t.Log("target PostgreSQL restarted")
	})
	t.Logf("%d records produced across %d kills (%d with the target down)", n, kills+targetDownKills, targetDownKills)
	pg.Close(ctx)
	if pg, err = pgx.Connect(ctx, targetURL); err != nil {
		t.Fatal(err)
	}

	// What PostgreSQL computes over the input.
	for _, q := range []string{
		"CREATE TABLE input (id bigint PRIMARY KEY, g int, v int)",
		fmt.Sprintf("INSERT INTO input SELECT i, i %% %d, i %% 101 FROM generate_series(1, %d) i", groups, n),
	} {
		if _, err := pg.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	pgRows := func(q string) []string {
		rows, err := pg.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var g, cnt, sum int64
			if err := rows.Scan(&g, &cnt, &sum); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d|%d|%d", g, cnt, sum))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := pgRows("SELECT g, count(*), sum(v) FROM input GROUP BY g ORDER BY g")
	conn = c.connect()
	waitEqual(t, conn, "SELECT g, n, s FROM mv ORDER BY g", func() []string { return want }, 2*time.Minute)

	deadline := time.Now().Add(time.Minute)
	for got := pgRows("SELECT g, n, s FROM agg ORDER BY g"); !slices.Equal(got, want); got = pgRows("SELECT g, n, s FROM agg ORDER BY g") {
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL target:\n%s\nwant (the view, and PostgreSQL over the input):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The Kafka sink's topic, read_committed from its start, until its
	// last record per group is the view's row.
	type rec struct{ G, N, S int64 }
	var records int
	var last map[int64]rec
	for deadline = time.Now().Add(time.Minute); ; {
		recs := readTopic(t, addr, "out", 1, true, 10*time.Second)
		records, last = len(recs), map[int64]rec{}
		seq := map[int64][]int64{}
		for _, r := range recs {
			var k struct{ G int64 }
			if err := json.Unmarshal(r.Key, &k); err != nil {
				t.Fatalf("key %s: %v", r.Key, err)
			}
			if r.Value == nil {
				// A tombstone: an update's delete and insert fell in two
				// batches; count(*) of a group never reaches 0 here.
				delete(last, k.G)
				continue
			}
			var v rec
			if err := json.Unmarshal(r.Value, &v); err != nil || v.G != k.G {
				t.Fatalf("value %s for key %s: %v", r.Value, r.Key, err)
			}
			if s := seq[k.G]; len(s) > 0 && v.N <= s[len(s)-1] {
				t.Fatalf("group %d: count %d after %d in the read_committed topic: a change delivered twice (counts so far %v)", k.G, v.N, s[len(s)-1], s)
			}
			seq[k.G] = append(seq[k.G], v.N)
			last[k.G] = v
		}
		var got []string
		for g := range int64(groups) {
			if v, ok := last[g]; ok {
				got = append(got, fmt.Sprintf("%d|%d|%d", v.G, v.N, v.S))
			}
		}
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafka sink topic, last record per group:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("view = PostgreSQL target = PostgreSQL over the input (%d groups); kafka topic: %d records, counts strictly rising per group", groups, records)
}
