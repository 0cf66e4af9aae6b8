package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestRisingWaveDocExamples runs the Kafka examples of RisingWave's
// documentation (integrations/sources/kafka) as written there, with only
// the broker address and topics adapted: trailing commas in the column
// and WITH lists, unquoted numeric properties.*, INCLUDE payload,
// FORMAT UPSERT ENCODE JSON keyed by PRIMARY KEY (rw_key) over INCLUDE
// key AS rw_key (a tombstone deletes by that key), ENCODE CSV and
// ENCODE BYTES.
func TestRisingWaveDocExamples(t *testing.T) {
	b := startBroker(t, 1, "demo_topic", "kafka_1_partition_topic", "t1", "kafka_csv_topic", "topic1")
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	b.produce(t,
		rec("demo_topic", 0, "", `{"column1": "a", "column2": 1}`),
		rec("kafka_1_partition_topic", 0, "", `{"v1": 1, "v2": "a", "extra": [5]}`),
		rec("t1", 0, "k1", `{"column1": "a", "column2": 1}`),
		rec("t1", 0, "k2", `{"column1": "b", "column2": 2}`),
		rec("t1", 0, "k1", `{"column1": "a2", "column2": 3}`),
		rec("kafka_csv_topic", 0, "", "1,x"),
		rec("kafka_csv_topic", 0, "", "2,y"),
		rec("topic1", 0, "", "abc"),
	)
	tomb := rec("t1", 0, "k2", "")
	tomb.Value = nil
	b.produce(t, tomb)
	stmts := []string{
		`CREATE SOURCE IF NOT EXISTS source_abc (
   column1 varchar,
   column2 integer,
)
WITH (
   connector='kafka',
   topic='demo_topic',
   properties.bootstrap.server='BROKER',
   scan.startup.mode='earliest'
) FORMAT PLAIN ENCODE JSON`,
		`CREATE SOURCE s1 (v1 int, v2 varchar) with (
  connector = 'kafka',
  topic = 'kafka_1_partition_topic',
  properties.bootstrap.server = 'BROKER',
  scan.startup.mode = 'earliest',
  properties.queued.min.messages = 10000,
  properties.queued.max.messages.kbytes = 65536
) FORMAT PLAIN ENCODE JSON`,
		`CREATE TABLE table_include_payload (v1 int, v2 varchar)
INCLUDE payload
WITH (
    connector = 'kafka',
    topic = 'kafka_1_partition_topic',
    properties.bootstrap.server = 'BROKER',
    scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE JSON`,
		`CREATE TABLE IF NOT EXISTS source_up (
   column1 varchar,
   column2 integer,
   primary key (rw_key)
)
include key as rw_key
WITH (
   connector='kafka',
   properties.bootstrap.server='BROKER',
   topic='t1'
) FORMAT UPSERT ENCODE JSON`,
		`CREATE TABLE s0 (v1 int, v2 varchar)
WITH (
   connector = 'kafka',
   topic = 'kafka_csv_topic',
   properties.bootstrap.server = 'BROKER',
   scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE CSV (
   without_header = 'true',
   delimiter = ','
)`,
		`CREATE SOURCE t1 (id bytea)
WITH (
   connector='kafka',
   topic='topic1',
   properties.bootstrap.server='BROKER',
) FORMAT PLAIN ENCODE BYTES`,
		`CREATE MATERIALIZED VIEW abc_mv AS SELECT column1, column2 FROM source_abc`,
		`CREATE MATERIALIZED VIEW s1_mv AS SELECT v1, v2 FROM s1`,
		`CREATE MATERIALIZED VIEW t1_mv AS SELECT id FROM t1`,
	}
	for _, s := range stmts {
		servertest.Exec(t, conn, strings.ReplaceAll(s, "BROKER", b.addr))
	}
	waitRows(t, conn, `SELECT column1, column2 FROM abc_mv`, "a|1")
	waitRows(t, conn, `SELECT v1, v2 FROM s1_mv`, "1|a")
	waitRows(t, conn, `SELECT v1, v2, _rw_kafka_payload FROM table_include_payload`, `1|a|{"v1": 1, "v2": "a", "extra": [5]}`)
	waitRows(t, conn, `SELECT column1, column2, rw_key FROM source_up`, `a2|3|\x6b31`)
	waitRows(t, conn, `SELECT v1, v2 FROM s0 ORDER BY v1`, "1|x;2|y")
	waitRows(t, conn, `SELECT id FROM t1_mv`, `\x616263`)
}

// TestRisingWaveDocErrors: what the documented forms refuse, with the
// SQLSTATE and the option named.
func TestRisingWaveDocErrors(t *testing.T) {
	b := startBroker(t, 1, "e")
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	with := fmt.Sprintf(`WITH (connector = 'kafka', topic = 'e', properties.bootstrap.server = '%s')`, b.addr)
	for _, c := range []struct{ sql, code, msg string }{
		{`CREATE SOURCE eb (id bytea, other bytea) ` + with + ` FORMAT PLAIN ENCODE BYTES`, "42P16", "exactly one bytea column"},
		{`CREATE SOURCE eb (id varchar) ` + with + ` FORMAT PLAIN ENCODE BYTES`, "42804", `column "id" must be bytea`},
		{`CREATE TABLE ek (v int, PRIMARY KEY (nokey)) INCLUDE key AS k ` + with + ` FORMAT UPSERT ENCODE JSON`, "42703", `column "nokey" named in key does not exist`},
	} {
		_, err := conn.Exec(context.Background(), c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || !strings.Contains(pe.Message, c.msg) {
			t.Errorf("%s: got %v; want %s %q", c.sql, err, c.code, c.msg)
		}
	}
}
