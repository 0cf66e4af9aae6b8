package kafka_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runneldb/runnel/internal/stream/exec"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestKafkaExactlyOnceAcrossRecoverAndRestart: a source read by a view and
// a table without a key (so a duplicate would be a second row) equal the
// produced input exactly — no loss, no duplicate — across RECOVER, a
// partition added to the topic (picked up by the relisting) and a server
// restart. The offsets live only in Runnel's checkpoint (I7).
func TestKafkaExactlyOnceAcrossRecoverAndRestart(t *testing.T) {
	defer func(d time.Duration) { exec.SplitPollInterval = d }(exec.SplitPollInterval)
	exec.SplitPollInterval = 100 * time.Millisecond
	b := startBroker(t, 2, "eo")
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	next, parts := 1, int32(2)
	produce := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			b.produce(t, rec("eo", int32(next)%parts, "", fmt.Sprintf(`{"id": %d}`, next)))
			next++
		}
	}
	want := func() string {
		n := next - 1
		return fmt.Sprintf("%d|%d|%d", n, n*(n+1)/2, n)
	}
	with := fmt.Sprintf(`WITH (connector = 'kafka', topic = 'eo', properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE JSON`, b.addr)
	produce(50)
	servertest.Exec(t, conn, `CREATE SOURCE eo (id BIGINT) `+with)
	servertest.Exec(t, conn, `CREATE TABLE eo_t (id BIGINT) `+with)
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW eo_mv AS SELECT count(*) AS n, sum(id) AS s, count(DISTINCT id) AS d FROM eo`)
	check := func() {
		t.Helper()
		waitRows(t, conn, `SELECT n, s, d FROM eo_mv`, want())
		waitRows(t, conn, `SELECT count(*), sum(id), count(DISTINCT id) FROM eo_t`, want())
	}
	check()
	produce(30)
	servertest.Exec(t, conn, `RECOVER`)
	produce(30)
	check()

	// A partition added to the topic is read too.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "eo", 3
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	if _, err := req.RequestWith(ctx, b.prod); err != nil {
		t.Fatal(err)
	}
	parts = 3
	b.prod = newProducer(t, b.addr, "eo") // with the new partition's metadata
	produce(30)
	check()

	srv = srv.Restart(t)
	conn = servertest.Connect(t, srv.URL())
	produce(30)
	check()
}

// TestKafkaUnreachableBroker: a source whose broker is down is shown
// "retrying" in rw_source_stats (its view exists and reads nothing), and
// reads once the broker comes up.
func TestKafkaUnreachableBroker(t *testing.T) {
	addr := servertest.FreeAddr(t)
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE down (x INT) WITH (connector = 'kafka', topic = 'late',
		properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE JSON`, addr))
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW down_mv AS SELECT count(*) AS n FROM down`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := strings.Join(servertest.QueryText(t, conn, `SELECT status FROM rw_catalog.rw_source_stats WHERE name = 'down'`), "")
		if strings.HasPrefix(st, "retrying: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %q; want retrying", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitRows(t, conn, `SELECT n FROM down_mv`, "0")

	c, err := kfake.NewCluster(kfake.Ports(port), kfake.SeedTopics(1, "late"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := &broker{c: c, addr: addr}
	b.prod = newProducer(t, addr, "late")
	b.produce(t, rec("late", 0, "", `{"x": 1}`), rec("late", 0, "", `{"x": 2}`))
	waitRows(t, conn, `SELECT n FROM down_mv`, "2")
	waitRows(t, conn, `SELECT status FROM rw_catalog.rw_source_stats WHERE name = 'down'`, "running")
}
