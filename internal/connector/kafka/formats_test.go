package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestKafkaFormats: UPSERT JSON (null value deletes by key), DEBEZIUM
// JSON (c/u/d, with and without the schema envelope), PLAIN CSV with a
// delimiter, with and without a header, and INCLUDE columns.
func TestKafkaFormats(t *testing.T) {
	b := startBroker(t, 1, "up", "dbz", "csv", "csvh", "inc")
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	with := func(topic string) string {
		return fmt.Sprintf(`WITH (connector = 'kafka', topic = '%s', properties.bootstrap.server = '%s')`, topic, b.addr)
	}
	tomb := rec("up", 0, `{"id": 2}`, "")
	tomb.Value = nil
	b.produce(t,
		rec("up", 0, `{"id": 1}`, `{"id": 1, "v": "a"}`),
		rec("up", 0, `{"id": 2}`, `{"id": 2, "v": "b"}`),
		rec("up", 0, `{"id": 1}`, `{"id": 1, "v": "a2"}`),
		tomb,
		rec("up", 0, `3`, `{"v": "c"}`), // the key column from a bare key
	)
	servertest.Exec(t, conn, `CREATE TABLE up (id INT PRIMARY KEY, v VARCHAR) `+with("up")+` FORMAT UPSERT ENCODE JSON`)
	waitRows(t, conn, `SELECT id, v FROM up ORDER BY id`, "1|a2;3|c")

	b.produce(t,
		rec("dbz", 0, "", `{"before": null, "after": {"id": 1, "v": "a"}, "op": "c"}`),
		rec("dbz", 0, "", `{"payload": {"before": null, "after": {"id": 2, "v": "b"}, "op": "r"}}`),
		rec("dbz", 0, "", `{"before": {"id": 1, "v": "a"}, "after": {"id": 1, "v": "a1"}, "op": "u"}`),
		rec("dbz", 0, "", `{"before": {"id": 2, "v": "b"}, "after": null, "op": "d"}`),
		rec("dbz", 0, "", `{"before": {"id": 3}, "after": {"id": 4, "v": "moved"}, "op": "u"}`),
	)
	servertest.Exec(t, conn, `CREATE TABLE dbz (id INT PRIMARY KEY, v VARCHAR) `+with("dbz")+` FORMAT DEBEZIUM ENCODE JSON`)
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW dbz_n AS SELECT count(*) AS n FROM dbz`)
	waitRows(t, conn, `SELECT id, v FROM dbz ORDER BY id`, "1|a1;4|moved")
	waitRows(t, conn, `SELECT n FROM dbz_n`, "2")

	b.produce(t, rec("csv", 0, "", "1|x"), rec("csv", 0, "", "2|"), rec("csv", 0, "", `"3"|"q|uoted"`))
	servertest.Exec(t, conn, `CREATE SOURCE csv (a INT, b VARCHAR) `+with("csv")+` FORMAT PLAIN ENCODE CSV (delimiter = '|', without_header = 'true')`)
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW csv_mv AS SELECT a, b FROM csv`)
	waitRows(t, conn, `SELECT a, b FROM csv_mv ORDER BY a`, "1|x;2|NULL;3|q|uoted")

	b.produce(t, rec("csvh", 0, "", "b,a"), rec("csvh", 0, "", "x,1"), rec("csvh", 0, "", "y,oops"))
	servertest.Exec(t, conn, `CREATE TABLE csvh (a INT, b VARCHAR) `+with("csvh")+` FORMAT PLAIN ENCODE CSV (without_header = 'false')`)
	waitRows(t, conn, `SELECT a, b FROM csvh ORDER BY b`, "1|x;NULL|y")

	r := rec("inc", 0, "k1", `{"v": "one"}`)
	r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("hv")}, {Key: "other", Value: []byte("o")}}
	r.Timestamp = time.UnixMilli(1700000000123)
	b.produce(t, r)
	servertest.Exec(t, conn, `CREATE SOURCE inc (v VARCHAR) INCLUDE key AS k INCLUDE partition AS p INCLUDE offset AS o
		INCLUDE timestamp AS ts INCLUDE header 'h' AS hv INCLUDE header AS hs `+with("inc")+` FORMAT PLAIN ENCODE JSON`)
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW inc_mv AS SELECT v, k, p, o, ts, hv, hs FROM inc`)
	waitRows(t, conn, `SELECT v, k, p, o, ts, hv, hs FROM inc_mv`,
		`one|\x6b31|0|0|2023-11-14 22:13:20.123+00|\x6876|{"h": "hv", "other": "o"}`)
}

// TestKafkaTransactions: read_committed — an aborted transaction's
// records never appear — and a partition ending in a commit marker is
// reported caught up (judged from the last stable offset; the marker's
// offset is past the last record's).
func TestKafkaTransactions(t *testing.T) {
	b := startBroker(t, 1, "tx")
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	txc, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.TransactionalID("runnel-test"), kgo.DefaultProduceTopic("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer txc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	txn := func(commit bool, vals ...int) {
		t.Helper()
		if err := txc.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if err := txc.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf(`{"x": %d}`, v))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txc.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	txn(true, 1, 2)
	txn(false, 100, 200)
	txn(true, 3)
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE tx (x INT) WITH (connector = 'kafka', topic = 'tx',
		properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE JSON`, b.addr))
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW tx_mv AS SELECT count(*) AS n, sum(x) AS s FROM tx`)
	waitRows(t, conn, `SELECT n, s FROM tx_mv`, "3|6")
	waitRows(t, conn, `SELECT caught_up FROM rw_catalog.rw_source_stats WHERE name = 'tx'`, "t")
}

// TestKafkaWatermark: WATERMARK FOR on a Kafka source drops rows late by
// it, as on a nexmark source (the watermark is kept in the split-state
// table under the actor's key).
func TestKafkaWatermark(t *testing.T) {
	b := startBroker(t, 1, "wm")
	srv := servertest.Start(t, servertest.WithConfig(func(c *server.Config) { c.Parallelism = 1 }))
	conn := servertest.Connect(t, srv.URL())
	b.produce(t,
		rec("wm", 0, "", `{"x": 1, "ts": "2026-01-01 10:00:10"}`),
		rec("wm", 0, "", `{"x": 2, "ts": "2026-01-01 10:00:00"}`), // 10 s late: dropped
		rec("wm", 0, "", `{"x": 3, "ts": "2026-01-01 10:00:09.5"}`),
	)
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE wm (x INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
		WITH (connector = 'kafka', topic = 'wm', properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE JSON`, b.addr))
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW wm_mv AS SELECT count(*) AS n, sum(x) AS s FROM wm`)
	waitRows(t, conn, `SELECT n, s FROM wm_mv`, "2|4")
}
