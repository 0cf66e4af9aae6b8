package kafka_test

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// orderAvroV1 and V2 are two versions of one record: V2 adds a field with
// a default (a compatible evolution), so records of both are on the topic.
const orderAvroV1 = `{"type": "record", "name": "Order", "namespace": "shop", "fields": [
  {"name": "id", "type": "int"},
  {"name": "name", "type": ["null", "string"], "default": null},
  {"name": "price", "type": "double"},
  {"name": "paid", "type": "boolean"},
  {"name": "qty", "type": "long"},
  {"name": "ratio", "type": "float"},
  {"name": "raw", "type": "bytes"},
  {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "line", "type": {"type": "record", "name": "Line", "fields": [{"name": "sku", "type": "string"}, {"name": "n", "type": "int"}]}},
  {"name": "attrs", "type": {"type": "map", "values": "long"}},
  {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}}
]}`

var orderAvroV2 = strings.Replace(orderAvroV1, `{"name": "id", "type": "int"},`,
	`{"name": "id", "type": "int"}, {"name": "note", "type": ["null", "string"], "default": null},`, 1)

func orderValue(id int, name any) map[string]any {
	return map[string]any{
		"id": id, "name": name, "price": 2.5 * float64(id), "paid": id%2 == 0, "qty": int64(id) * 1000000000,
		"ratio": float32(0.5), "raw": []byte{0xde, 0xad}, "status": "PAID", "tags": []any{"a", "b"},
		"line": map[string]any{"sku": fmt.Sprintf("s%d", id), "n": id}, "attrs": map[string]any{"k": int64(id)},
		"ts": time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC), "day": time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC),
		"amount": big.NewRat(int64(id)*1234, 100),
	}
}

// confluent frames an Avro body as the schema registry's serializers do.
func confluent(id int, body []byte) []byte {
	out := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, body...)
}

// TestKafkaAvro: FORMAT PLAIN ENCODE AVRO with a schema registry (franz-go's
// srfake, which serves Confluent's REST API) and with a schema file. The
// registry source is declared without columns: they come from the
// subject's latest schema, typed as avro.go's table says. Records written
// with two schema versions decode by their writer schema's id; a record
// not in the wire format, or whose schema id is unknown, is skipped and
// counted while the others flow; a schema-file table decodes bare Avro.
func TestKafkaAvro(t *testing.T) {
	b := startBroker(t, 1, "orders", "plain")
	reg := srfake.New()
	defer reg.Close()
	v1 := sr.Schema{Schema: orderAvroV1, Type: sr.TypeAvro}
	v2 := sr.Schema{Schema: orderAvroV2, Type: sr.TypeAvro}
	reg.SeedSchema("orders-value", 1, 7, v1)
	reg.SeedSchema("orders-value", 2, 8, v2)
	s1 := avro.MustParse(orderAvroV1)
	s2 := avro.MustParse(orderAvroV2)
	enc := func(s avro.Schema, v map[string]any) []byte {
		body, err := avro.Marshal(s, v)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	withNote := orderValue(2, nil)
	withNote["note"] = "v2"
	b.produce(t,
		&kgo.Record{Topic: "orders", Value: confluent(7, enc(s1, orderValue(1, "ada")))},
		&kgo.Record{Topic: "orders", Value: []byte("not avro")},
		&kgo.Record{Topic: "orders", Value: confluent(99, enc(s1, orderValue(9, "unknown id")))},
		&kgo.Record{Topic: "orders", Value: confluent(8, enc(s2, withNote))},
	)

	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE orders WITH (connector = 'kafka', topic = 'orders',
		properties.bootstrap.server = '%s', scan.startup.mode = 'earliest')
		FORMAT PLAIN ENCODE AVRO (schema.registry = '%s')`, b.addr, reg.URL()))
	got := strings.Join(servertest.QueryText(t, conn,
		`SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'orders' ORDER BY ordinal_position`), ", ")
	want := "id integer, note character varying, name character varying, price double precision, paid boolean, qty bigint, ratio real, " +
		"raw bytea, status character varying, tags character varying[], line jsonb, attrs jsonb, ts timestamp with time zone, day date, amount numeric"
	if got != want {
		t.Fatalf("columns from the latest schema:\n%s\nwant\n%s", got, want)
	}
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW ov AS SELECT id, note, name, price, paid, qty, ratio, raw, status, tags, line, attrs, ts, day, amount FROM orders`)
	waitRows(t, conn, `SELECT id, note, name, price, paid, qty, ratio, raw, status, tags, line, attrs, ts, day, amount FROM ov ORDER BY id`,
		`1|NULL|ada|2.5|f|1000000000|0.5|\xdead|PAID|{a,b}|{"n": 1, "sku": "s1"}|{"k": 1}|2024-05-06 07:08:09.123456+00|2024-05-06|12.34;`+
			`2|v2|NULL|5|t|2000000000|0.5|\xdead|PAID|{a,b}|{"n": 2, "sku": "s2"}|{"k": 2}|2024-05-06 07:08:09.123456+00|2024-05-06|24.68`)
	waitRows(t, conn, `SELECT malformed FROM rw_catalog.rw_source_stats WHERE name = 'orders'`, "2")

	// A schema file, bare Avro bodies, declared columns (a subset, one
	// of another type: text read from a number).
	path := filepath.Join(t.TempDir(), "order.avsc")
	if err := os.WriteFile(path, []byte(orderAvroV1), 0o644); err != nil {
		t.Fatal(err)
	}
	b.produce(t, &kgo.Record{Topic: "plain", Value: enc(s1, orderValue(3, "bob"))})
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE TABLE plain (id int PRIMARY KEY, name varchar, price text) WITH (connector = 'kafka', topic = 'plain',
		properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE AVRO (schema.location = 'file://%s')`, b.addr, path))
	waitRows(t, conn, `SELECT id, name, price FROM plain`, "3|bob|7.5")

	for _, c := range []struct{ sql, want string }{
		{`CREATE SOURCE bad (x int) WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = '` + b.addr + `') FORMAT PLAIN ENCODE AVRO`, "schema.registry"},
		{`CREATE SOURCE bad WITH (connector = 'kafka', topic = 'nosubject', properties.bootstrap.server = '` + b.addr + `') FORMAT PLAIN ENCODE AVRO (schema.registry = '` + reg.URL() + `')`, "nosubject-value"},
		{`CREATE SOURCE bad (x int) WITH (connector = 'kafka', topic = 'orders', properties.bootstrap.server = '` + b.addr + `') FORMAT PLAIN ENCODE AVRO (schema.location = 'file:///nonexistent.avsc')`, "nonexistent"},
	} {
		if _, err := conn.Exec(t.Context(), c.sql); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error naming %s", c.sql, err, c.want)
		}
	}
}

// TestKafkaUpsertAvro: FORMAT UPSERT ENCODE AVRO in RisingWave's form (the
// key is INCLUDE KEY AS rw_key, the primary key) and with a value column
// as the key, the record key an Avro record registered as <topic>-key: a
// value replaces the row of its key, a null value (a tombstone) deletes it.
func TestKafkaUpsertAvro(t *testing.T) {
	b := startBroker(t, 1, "up1", "up2")
	reg := srfake.New()
	defer reg.Close()
	const val = `{"type": "record", "name": "V", "fields": [{"name": "id", "type": "int"}, {"name": "v", "type": "string"}]}`
	const key = `{"type": "record", "name": "K", "fields": [{"name": "id", "type": "int"}]}`
	reg.SeedSchema("up1-value", 1, 10, sr.Schema{Schema: val, Type: sr.TypeAvro}) // up2's value too (ids are global)
	reg.SeedSchema("up2-key", 1, 11, sr.Schema{Schema: key, Type: sr.TypeAvro})
	vs, ks := avro.MustParse(val), avro.MustParse(key)
	v := func(id int, s string) []byte {
		return confluent(10, must(avro.Marshal(vs, map[string]any{"id": id, "v": s})))
	}
	k := func(id int) []byte { return confluent(11, must(avro.Marshal(ks, map[string]any{"id": id}))) }
	for _, topic := range []string{"up1", "up2"} {
		key := func(id int) []byte {
			if topic == "up1" {
				return []byte(fmt.Sprintf("k%d", id))
			}
			return k(id)
		}
		b.produce(t,
			&kgo.Record{Topic: topic, Key: key(1), Value: v(1, "a")},
			&kgo.Record{Topic: topic, Key: key(2), Value: v(2, "b")},
			&kgo.Record{Topic: topic, Key: key(1), Value: v(1, "a2")},
			&kgo.Record{Topic: topic, Key: key(3), Value: v(3, "c")},
			&kgo.Record{Topic: topic, Key: key(2)}, // tombstone
		)
	}
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE TABLE up1 (id int, v varchar, PRIMARY KEY (rw_key)) INCLUDE KEY AS rw_key
		WITH (connector = 'kafka', topic = 'up1', properties.bootstrap.server = '%s')
		FORMAT UPSERT ENCODE AVRO (schema.registry = '%s')`, b.addr, reg.URL()))
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE TABLE up2 (id int PRIMARY KEY, v varchar)
		WITH (connector = 'kafka', topic = 'up2', properties.bootstrap.server = '%s')
		FORMAT UPSERT ENCODE AVRO (schema.registry = '%s')`, b.addr, reg.URL()))
	waitRows(t, conn, `SELECT encode(rw_key, 'escape'), id, v FROM up1 ORDER BY id`, "k1|1|a2;k3|3|c")
	waitRows(t, conn, `SELECT id, v FROM up2 ORDER BY id`, "1|a2;3|c")
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestKafkaDebeziumAvro: FORMAT DEBEZIUM ENCODE AVRO, events as Debezium's
// Avro converter writes them (an envelope with nullable before and after
// rows, op, source fields; Confluent framing): create, read (snapshot),
// update and delete reach the table; a tombstone is ignored; an event
// with an unknown op is skipped and counted.
func TestKafkaDebeziumAvro(t *testing.T) {
	b := startBroker(t, 1, "dbz")
	reg := srfake.New()
	defer reg.Close()
	const env = `{"type": "record", "name": "Envelope", "namespace": "pg.public.t", "fields": [
	  {"name": "before", "type": ["null", {"type": "record", "name": "Value", "fields": [
	    {"name": "id", "type": "int"}, {"name": "v", "type": ["null", "string"], "default": null}]}], "default": null},
	  {"name": "after", "type": ["null", "Value"], "default": null},
	  {"name": "source", "type": {"type": "record", "name": "Source", "fields": [{"name": "table", "type": "string"}]}},
	  {"name": "op", "type": "string"},
	  {"name": "ts_ms", "type": ["null", "long"], "default": null}]}`
	reg.SeedSchema("dbz-value", 1, 30, sr.Schema{Schema: env, Type: sr.TypeAvro})
	es := avro.MustParse(env)
	row := func(id int, v string) map[string]any { return map[string]any{"id": id, "v": v} }
	ev := func(op string, before, after map[string]any) []byte {
		m := map[string]any{"op": op, "source": map[string]any{"table": "t"}, "ts_ms": int64(1)}
		// A union with a record branch is written (and read back
		// generically) as {branch name: value}.
		if before != nil {
			m["before"] = map[string]any{"pg.public.t.Value": before}
		}
		if after != nil {
			m["after"] = map[string]any{"pg.public.t.Value": after}
		}
		return confluent(30, must(avro.Marshal(es, m)))
	}
	b.produce(t,
		&kgo.Record{Topic: "dbz", Value: ev("r", nil, row(1, "snap"))},
		&kgo.Record{Topic: "dbz", Value: ev("c", nil, row(2, "b"))},
		&kgo.Record{Topic: "dbz", Value: ev("c", nil, row(3, "c"))},
		&kgo.Record{Topic: "dbz", Value: ev("u", row(2, "b"), row(2, "b2"))},
		&kgo.Record{Topic: "dbz", Value: ev("d", row(3, "c"), nil)},
		&kgo.Record{Topic: "dbz", Key: []byte("3")}, // tombstone
		&kgo.Record{Topic: "dbz", Value: ev("x", nil, row(9, "bad"))},
	)
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE TABLE t (id int PRIMARY KEY, v varchar)
		WITH (connector = 'kafka', topic = 'dbz', properties.bootstrap.server = '%s')
		FORMAT DEBEZIUM ENCODE AVRO (schema.registry = '%s')`, b.addr, reg.URL()))
	waitRows(t, conn, `SELECT id, v FROM t ORDER BY id`, "1|snap;2|b2")
	waitRows(t, conn, `SELECT malformed FROM rw_catalog.rw_source_stats WHERE name = 't'`, "1")
}

// TestKafkaAvroRecursiveSchemaRefused: a record that contains itself (a
// linked list) is refused — by CREATE for a schema file, and as a
// malformed record (skipped, counted) for a registry writer schema — so a
// record nesting millions of levels cannot overflow the decoder's stack
// and end the process (I9).
func TestKafkaAvroRecursiveSchemaRefused(t *testing.T) {
	const list = `{"type": "record", "name": "Node", "fields": [{"name": "id", "type": "int"},
	  {"name": "next", "type": ["null", "Node"], "default": null}]}`
	b := startBroker(t, 1, "rec")
	reg := srfake.New()
	defer reg.Close()
	reg.SeedSchema("other-value", 1, 40, sr.Schema{Schema: list, Type: sr.TypeAvro})
	// 200,000 nested nodes: union index 1 (zigzag 2) then id 0, repeated.
	body := []byte{}
	for range 200_000 {
		body = append(body, 0, 2)
	}
	body = append(body, 0, 0)
	b.produce(t, &kgo.Record{Topic: "rec", Value: confluent(40, body)})
	path := filepath.Join(t.TempDir(), "list.avsc")
	if err := os.WriteFile(path, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	_, err := conn.Exec(t.Context(), fmt.Sprintf(`CREATE SOURCE f (id int) WITH (connector = 'kafka', topic = 'rec',
		properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE AVRO (schema.location = 'file://%s')`, b.addr, path))
	if err == nil || !strings.Contains(err.Error(), "contains itself") {
		t.Fatalf("CREATE with a recursive schema file: %v", err)
	}
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE r (id int) WITH (connector = 'kafka', topic = 'rec',
		properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE AVRO (schema.registry = '%s')`, b.addr, reg.URL()))
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW rn AS SELECT count(*) AS n FROM r`)
	waitRows(t, conn, `SELECT malformed FROM rw_catalog.rw_source_stats WHERE name = 'r'`, "1")
	waitRows(t, conn, `SELECT n FROM rn`, "0")
}
