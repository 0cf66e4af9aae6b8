package sinktest

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// readmeBlock returns the ```sql block that follows marker in README.md.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	return readmeBlockOf(t, marker, "sql")
}

// readmeBlockOf returns the ```lang block that follows marker in README.md.
func readmeBlockOf(t *testing.T, marker, lang string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<!-- ` + regexp.QuoteMeta(marker) + ` -->\n` + "```" + lang + "\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("README.md has no %s block after <!-- %s -->", lang, marker)
	}
	return string(m[1])
}

// TestREADMESinkExample runs README's "A Kafka topic through a view into
// a PostgreSQL table" as written, with the broker address pointed at an
// in-process Kafka broker (kfake) and the jdbc.url at the test's
// PostgreSQL: it produces the README's records and checks the rows the
// README promises, then one more bid.
func TestREADMESinkExample(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "bids"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	target, pg := targetDB(t)
	mustExec(t, pg, readmeBlock(t, "sink-example-target"))

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	script := regexp.MustCompile(`jdbc:postgresql://[^']*`).ReplaceAllString(readmeBlock(t, "sink-example"), jdbcURL(t, target))
	script = strings.ReplaceAll(script, "127.0.0.1:9092", addr)
	for _, stmt := range strings.Split(script, ";") {
		if strings.TrimSpace(stmt) != "" {
			mustExec(t, rw, stmt)
		}
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("bids"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(lines string) {
		t.Helper()
		for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
			if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte(l)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(readmeBlockOf(t, "sink-example-records", "json"))
	want := []string{"1|2|120", "2|1|50"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := rowsOf(t, pg, "SELECT * FROM bids_per_auction")
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bids_per_auction: %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	produce(`{"auction": 2, "bidder": 12, "price": 70}`)
	want = []string{"1|2|120", "2|2|70"}
	deadline = time.Now().Add(30 * time.Second)
	for {
		got := rowsOf(t, pg, "SELECT * FROM bids_per_auction")
		if slices.Equal(got, want) && slices.Equal(rowsOf(t, rw, "SELECT * FROM per_auction"), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bids_per_auction: %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
