package kafka_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestKafkaPlainJSON: a CREATE SOURCE over a two-partition topic feeds a
// view; a malformed record is skipped and counted in
// rw_catalog.rw_source_stats; a field of the wrong type is NULL; records
// produced later (to either partition) arrive; a CREATE TABLE with the
// same options stores the topic.
func TestKafkaPlainJSON(t *testing.T) {
	b := startBroker(t, 2, "events")
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	b.produce(t,
		rec("events", 0, "", `{"id": 1, "name": "a", "v": 1.5}`),
		rec("events", 1, "", `{"id": 2, "name": "b", "v": 2.5}`),
		rec("events", 0, "", `{"id": 3, "name": "c", "v": "not a number"}`),
		rec("events", 1, "", `{not json`),
	)
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE s (id INT, name VARCHAR, v DOUBLE PRECISION) WITH (
		connector = 'kafka', topic = 'events', properties.bootstrap.server = '%s',
		scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON`, b.addr))
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW mv AS SELECT count(*) AS n, sum(id) AS ids, count(v) AS vs FROM s`)
	waitRows(t, conn, `SELECT n, ids, vs FROM mv`, "3|6|2")
	waitRows(t, conn, `SELECT name, rows, malformed FROM rw_catalog.rw_source_stats WHERE name = 's'`, "s|3|1")
	last := servertest.QueryText(t, conn, `SELECT last_malformed, status FROM rw_catalog.rw_source_stats WHERE name = 's'`)
	if len(last) != 1 || last[0] == "" || !strings.Contains(last[0], "partition 1 offset 1") || !strings.Contains(last[0], "|running") {
		t.Fatalf("stats %v; want the malformed record located and status running", last)
	}
	b.produce(t, rec("events", 1, "", `{"id": 10, "name": "x"}`), rec("events", 0, "", `{"ID": 20}`))
	waitRows(t, conn, `SELECT n, ids, vs FROM mv`, "5|36|2")

	servertest.Exec(t, conn, fmt.Sprintf(`CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR) WITH (
		connector = 'kafka', topic = 'events', properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE JSON`, b.addr))
	waitRows(t, conn, `SELECT id, name FROM t ORDER BY id`, "1|a;2|b;3|c;10|x;20|NULL")
}

// TestUnknownOptionsWarned: a WITH option the kafka connector does not use
// (a misspelt scan.startup.mode) gets a WARNING naming it instead of being
// ignored in silence; known ones, properties.* and INCLUDE/FORMAT options
// get none.
func TestUnknownOptionsWarned(t *testing.T) {
	b := startBroker(t, 1, "warned")
	srv := servertest.Start(t)
	conn, noticed := servertest.ConnectNotices(t, srv.URL())
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE ok1 (x int) INCLUDE offset AS o WITH (connector = 'kafka', topic = 'warned',
		properties.bootstrap.server = '%s', scan.startup.mode = 'earliest', properties.client.id = 'c') FORMAT PLAIN ENCODE JSON`, b.addr))
	if notices := noticed(); len(notices) != 0 {
		t.Fatalf("notices for known options: %v", notices)
	}
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE typo (x int) WITH (connector = 'kafka', topic = 'warned',
		properties.bootstrap.server = '%s', scan.startup.mod = 'earliest') FORMAT PLAIN ENCODE JSON`, b.addr))
	if notices := noticed(); len(notices) != 1 || !strings.Contains(notices[0], `WARNING: WITH option "scan.startup.mod" is not used by the kafka connector`) {
		t.Fatalf("notices = %v; want one WARNING naming scan.startup.mod", notices)
	}
}
