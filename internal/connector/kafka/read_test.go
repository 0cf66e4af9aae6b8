package kafka_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/connector/kafka"
	"github.com/runneldb/runnel/internal/types"
)

// TestKafkaReadBench: the connector alone (no server, one partition)
// reading a topic of RUNNEL_KAFKA_BENCH records from kfake.
func TestKafkaReadBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RUNNEL_KAFKA_BENCH"))
	if n <= 0 {
		t.Skip("RUNNEL_KAFKA_BENCH")
	}
	b := startBroker(t, 1, "r")
	ctx := context.Background()
	var recs []*kgo.Record
	for j := 0; j < n; j++ {
		recs = append(recs, &kgo.Record{Topic: "r", Value: []byte(fmt.Sprintf(`{"a": %d, "b": "x%d"}`, j, j))})
	}
	if err := b.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	src, err := kafka.New(connector.Spec{Columns: []connector.Column{{Name: "a", Type: types.Int64}, {Name: "b", Type: types.Varchar}},
		Options: map[string]string{"topic": "r", "properties.bootstrap.server": b.addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	st, err := src.OpenSplit(ctx, connector.Split{ID: "0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	got, reads := 0, 0
	for got < n {
		bt, err := st.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += bt.Changes.Len()
		reads++
	}
	t.Logf("%d records in %v (%d reads)", got, time.Since(start), reads)
}
