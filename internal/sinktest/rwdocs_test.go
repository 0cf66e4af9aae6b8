package sinktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestRisingWaveSinkDocExamples runs the sink examples of RisingWave's
// documentation as written there (broker and jdbc.url adapted): a Kafka
// sink's type comes from FORMAT when WITH has none (PLAIN ENCODE JSON
// (force_append_only = 'true') append-only, UPSERT upsert), a blackhole
// sink needs no type, librdkafka properties.* and sink_decouple /
// commit_checkpoint_interval are taken, and snapshot = 'false' is
// refused with 0A000 naming it.
func TestRisingWaveSinkDocExamples(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "test", "up"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	target, pg := targetDB(t)
	mustExec(t, pg, `CREATE TABLE target_count (target_id varchar(128) PRIMARY KEY, target_count bigint)`)
	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, `CREATE TABLE t (id int PRIMARY KEY, v varchar)`)
	mustExec(t, rw, `INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'a')`)
	mustExec(t, rw, `CREATE MATERIALIZED VIEW target_count AS SELECT v AS target_id, count(*) AS target_count FROM t GROUP BY v`)
	for _, s := range []string{
		`CREATE SINK sink1 FROM t
WITH (
   connector='kafka',
   properties.bootstrap.server='BROKER',
   topic='test',
)
FORMAT PLAIN ENCODE JSON (
   force_append_only='true'
)`,
		`CREATE SINK sink2 FROM target_count WITH (connector='kafka', properties.bootstrap.server='BROKER', topic='up',
   primary_key='target_id', properties.linger.ms = 10, properties.compression.codec = 'lz4') FORMAT UPSERT ENCODE JSON`,
		`CREATE SINK target_count_postgres_sink FROM target_count WITH (
    connector = 'jdbc',
    jdbc.url = 'JDBC',
    table.name = 'target_count',
    type = 'upsert',
    primary_key = 'target_id',
    sink_decouple = 'true',
    commit_checkpoint_interval = 10
)`,
		`CREATE SINK bh FROM target_count WITH (connector = 'blackhole')`,
	} {
		mustExec(t, rw, strings.ReplaceAll(strings.ReplaceAll(s, "BROKER", addr), "JDBC", jdbcURL(t, target)))
	}
	waitEqual(t, rw, pg, `SELECT * FROM target_count`, `SELECT * FROM target_count`, 30*time.Second)
	var mu sync.Mutex
	got := map[string][]string{}
	for _, topic := range []string{"test", "up"} {
		consumeUntil(t, addr, topic, 30*time.Second, func(r *kgo.Record) {
			mu.Lock()
			defer mu.Unlock()
			got[topic] = append(got[topic], string(r.Key)+"="+string(r.Value))
		}, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got[topic]) >= 2+map[string]int{"test": 1}[topic]
		})
		slices.Sort(got[topic])
	}
	want := map[string][]string{
		"test": {`={"id":1,"v":"a"}`, `={"id":2,"v":"b"}`, `={"id":3,"v":"a"}`},
		"up":   {`{"target_id":"a"}={"target_id":"a","target_count":2}`, `{"target_id":"b"}={"target_id":"b","target_count":1}`},
	}
	for topic, w := range want {
		if !slices.Equal(got[topic], w) {
			t.Errorf("topic %s: got %q; want %q", topic, got[topic], w)
		}
	}
	rows := rowsOf(t, rw, `SELECT name, connector, sink_type FROM rw_catalog.rw_sinks`)
	if w := []string{"bh|blackhole|append-only", "sink1|kafka|append-only", "sink2|kafka|upsert", "target_count_postgres_sink|jdbc|upsert"}; !slices.Equal(rows, w) {
		t.Errorf("rw_sinks: got %q; want %q", rows, w)
	}
	for _, c := range []struct{ opt, code, msg string }{
		{`snapshot = 'false'`, "0A000", "snapshot = 'false' is not supported"},
		{`snapshot = 'maybe'`, "22023", "snapshot must be"},
		{`sink_decouple = 'yes'`, "22023", "sink_decouple must be"},
		{`commit_checkpoint_interval = 0`, "22023", "commit_checkpoint_interval must be"},
	} {
		_, err := rw.Exec(context.Background(), fmt.Sprintf(`CREATE SINK bad FROM t WITH (connector = 'blackhole', %s)`, c.opt))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || !strings.Contains(pe.Message, c.msg) {
			t.Errorf("%s: got %v; want %s %q", c.opt, err, c.code, c.msg)
		}
	}
	// A sink into a Runnel table, as RisingWave's documentation writes
	// it (no WITH): the table follows the view (TestSinkIntoTable).
	mustExec(t, rw, `CREATE TABLE tc (target_id varchar PRIMARY KEY, target_count bigint)`)
	mustExec(t, rw, `CREATE SINK s_into INTO tc FROM target_count`)
	mustExec(t, rw, `FLUSH`)
	if got, want := rowsOf(t, rw, `SELECT * FROM tc`), rowsOf(t, rw, `SELECT * FROM target_count`); !slices.Equal(got, want) {
		t.Errorf("CREATE SINK ... INTO tc FROM target_count: table %v; view %v", got, want)
	}
}
