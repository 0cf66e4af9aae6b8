package kafka_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// broker is an in-process kfake cluster speaking the Kafka protocol over
// TCP on a free loopback port, and a producer client for it.
type broker struct {
	c    *kfake.Cluster
	addr string
	prod *kgo.Client
}

func startBroker(t testing.TB, partitions int32, topics ...string) *broker {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addr := c.ListenAddrs()[0]
	return &broker{c: c, addr: addr, prod: newProducer(t, addr, topics[0])}
}

// newProducer is a client producing to the partition each record names.
func newProducer(t testing.TB, addr, topic string) *kgo.Client {
	t.Helper()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return prod
}

// produce writes records synchronously, failing the test on error.
func (b *broker) produce(t testing.TB, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// rec is a record for topic/partition with a key (nil: none) and value.
func rec(topic string, partition int32, key, value string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value)}
	if key != "" {
		r.Key = []byte(key)
	}
	return r
}

// waitRows polls query until its text rows, joined by ";", equal want.
func waitRows(t testing.TB, conn *pgx.Conn, query, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got string
	for {
		rows, err := servertest.TryQueryText(conn, query)
		got = strings.Join(rows, ";")
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %q (err %v); want %q", query, got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
