package kafka_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestKafkaIngestBench measures Kafka JSON ingest (Nexmark bids as JSON
// in a two-partition kfake topic, read by a source into a count(*) view)
// next to the built-in nexmark generator feeding the same view shape, in
// the same process. It runs only with RUNNEL_KAFKA_BENCH=<bids>
// (docs/benchmarks.md).
func TestKafkaIngestBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RUNNEL_KAFKA_BENCH"))
	if n <= 0 {
		t.Skip("set RUNNEL_KAFKA_BENCH=<events> to run the Kafka ingest benchmark")
	}
	b := startBroker(t, 2, "bids")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 5000
	for i := 0; i < n; i += batch {
		var recs []*kgo.Record
		for j := i; j < min(n, i+batch); j++ {
			v := fmt.Sprintf(`{"auction": %d, "bidder": %d, "price": %d, "channel": "channel-%d", "url": "https://www.nexmark.com/%d/item.htm?query=1", "date_time": "%s", "extra": ""}`,
				1000+j%997, 2000+j%4999, 100+j%10000, j%10, j%10000, base.Add(time.Duration(j)*time.Millisecond).Format("2006-01-02 15:04:05.000"))
			recs = append(recs, &kgo.Record{Topic: "bids", Partition: int32(j % 2), Value: []byte(v)})
		}
		if err := b.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	cols := `(auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR)`
	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE kbid %s WITH (connector = 'kafka', topic = 'bids',
		properties.bootstrap.server = '%s') FORMAT PLAIN ENCODE JSON`, cols, b.addr))
	start, cpu0 := time.Now(), servertest.ProcessCPU()
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW kcount AS SELECT count(*) AS n, sum(price) AS p FROM kbid`)
	for {
		rows := servertest.QueryText(t, conn, `SELECT n FROM kcount`)
		if len(rows) == 1 && rows[0] == strconv.Itoa(n) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	kafka, kafkaCPU := time.Since(start), servertest.ProcessCPU()-cpu0

	servertest.Exec(t, conn, fmt.Sprintf(`CREATE SOURCE nbid %s WITH (connector = 'nexmark', nexmark.table.type = 'Bid',
		nexmark.split.num = '2', nexmark.min.event.gap.in.ns = '0', nexmark.event.num = '%d')`, cols, n*50/46))
	start, cpu0 = time.Now(), servertest.ProcessCPU()
	servertest.Exec(t, conn, `CREATE MATERIALIZED VIEW ncount AS SELECT count(*) AS n, sum(price) AS p FROM nbid`)
	if err := srv.Server.WaitSources(ctx, "ncount"); err != nil {
		t.Fatal(err)
	}
	servertest.Exec(t, conn, `FLUSH`)
	nexmark, nexmarkCPU := time.Since(start), servertest.ProcessCPU()-cpu0
	nn, _ := strconv.Atoi(servertest.QueryText(t, conn, `SELECT n FROM ncount`)[0])
	procs := runtime.GOMAXPROCS(0)
	t.Logf("kafka JSON: %d bids in %v = %.0f events/s (%.0f per core, GOMAXPROCS=%d, broker in-process); %.2f CPU s = %.0f events per CPU-second (the broker's fetches included)",
		n, kafka.Round(time.Millisecond), float64(n)/kafka.Seconds(), float64(n)/kafka.Seconds()/float64(procs), procs, kafkaCPU.Seconds(), float64(n)/kafkaCPU.Seconds())
	t.Logf("nexmark generator: %d bids in %v = %.0f events/s (%.0f per core); %.2f CPU s = %.0f events per CPU-second",
		nn, nexmark.Round(time.Millisecond), float64(nn)/nexmark.Seconds(), float64(nn)/nexmark.Seconds()/float64(procs), nexmarkCPU.Seconds(), float64(nn)/nexmarkCPU.Seconds())
}
