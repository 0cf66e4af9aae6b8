package sinktest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// consumeUntil reads topic from its start with a read_committed consumer,
// handing each record to fn, until done reports true or limit passes.
func consumeUntil(t *testing.T, addr, topic string, limit time.Duration, fn func(*kgo.Record), done func() bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			return
		}
		fctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(fctx)
		cancel()
		fs.EachRecord(fn)
	}
}

// TestKafkaExactlyOnceSink: two kafka sinks of one table, one with
// is_exactly_once = 'true'. A test hook holds both workers right after
// their target committed an epoch and before the log's rows of it were
// released for truncation; the server restarts, so both read that epoch
// from the log again. The exactly-once sink finds the epoch in its
// consumer group's transactional offset and skips it: a read_committed
// consumer sees every row of the table exactly once. The at-least-once
// sink produces the epoch again (the control: its topic has duplicates,
// so the check can tell).
func TestKafkaExactlyOnceSink(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eos", "alo"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE ev (id int, v int) APPEND ONLY")
	for _, s := range []struct{ name, topic, eos string }{{"eos_sink", "eos", "true"}, {"alo_sink", "alo", "false"}} {
		mustExec(t, rw, fmt.Sprintf(`CREATE SINK %s FROM ev WITH (connector = 'kafka', properties.bootstrap.server = '%s',
			topic = '%s', type = 'append-only', is_exactly_once = '%s') FORMAT PLAIN ENCODE JSON`, s.name, addr, s.topic, s.eos))
	}

	held := holdAfterDelivery(t, "eos_sink", "alo_sink")
	mustExec(t, rw, "INSERT INTO ev SELECT i, i FROM generate_series(1, 100) g(i)")
	mustExec(t, rw, "FLUSH")
	for name, ch := range held {
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s delivered nothing: %v", name, rowsOf(t, rw, "SELECT name, status, last_error FROM rw_catalog.rw_sinks"))
		}
	}
	// Unhooked before the restart: the held workers stay blocked in the
	// hook until the old server stops, and the new server's workers,
	// which deliver the held epoch again at once, must not be held too.
	sink.SetDeliveredHook(nil)
	srv = srv.Restart(t)
	rw = srv.Connect(t)
	mustExec(t, rw, "INSERT INTO ev SELECT i, i FROM generate_series(101, 150) g(i)")
	mustExec(t, rw, "FLUSH")
	want := rowsOf(t, rw, "SELECT id, v FROM ev")

	// read consumes topic until it holds n records, and a few polls more
	// (a duplicate would show as records beyond n).
	read := func(topic string, n int) []string {
		var got []string
		extra := 0
		consumeUntil(t, addr, topic, 20*time.Second, func(rec *kgo.Record) {
			var m struct{ ID, V int64 }
			if err := json.Unmarshal(rec.Value, &m); err != nil {
				t.Fatalf("value %s: %v", rec.Value, err)
			}
			got = append(got, fmt.Sprintf("%d|%d", m.ID, m.V))
		}, func() bool {
			if len(got) >= n {
				extra++
			}
			return extra > 3
		})
		slices.Sort(got)
		return got
	}
	if got := read("eos", len(want)); !slices.Equal(got, want) {
		t.Fatalf("exactly-once topic (read_committed): %d records, table %d rows: %v", len(got), len(want), head(got))
	}
	if got := read("alo", len(want)+100); len(got) != len(want)+100 {
		t.Fatalf("at-least-once topic: %d records, want the table's %d plus the redelivered epoch's 100", len(got), len(want))
	}
}

// TestKafkaDebeziumSink: an upsert sink FORMAT DEBEZIUM ENCODE JSON from
// an aggregation view; every record's key is the primary key, its value
// {"payload": {"before", "after", "op"}} with op c (after only), u (before
// and after) or d (before only). Replaying the topic (c and u set the key
// to after, d removes it) gives the view, after seeded random DML and a
// RECOVER; the DML makes updates and deletes of groups, so u and d occur.
func TestKafkaDebeziumSink(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 7))
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "dbz"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]

	srv := servertest.Start(t)
	rw := srv.Connect(t)
	mustExec(t, rw, "CREATE TABLE t (k int PRIMARY KEY, g int, v int)")
	randomDML(t, rw, r, 20, 40)
	mustExec(t, rw, "CREATE MATERIALIZED VIEW mv AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g")
	mustExec(t, rw, fmt.Sprintf(`CREATE SINK dbz_sink FROM mv WITH (connector = 'kafka', properties.bootstrap.server = '%s',
		topic = 'dbz', type = 'upsert', primary_key = 'g') FORMAT DEBEZIUM ENCODE JSON`, addr))
	for round := 0; round < 3; round++ {
		randomDML(t, rw, r, 30, 40)
		mustExec(t, rw, "DELETE FROM t WHERE g = "+fmt.Sprint(round)) // a group disappears: op d
		if round == 1 {
			mustExec(t, rw, "FLUSH")
			mustExec(t, rw, "RECOVER")
		}
	}
	mustExec(t, rw, "FLUSH")
	want := rowsOf(t, rw, "SELECT g, n, s FROM mv")

	type row struct{ G, N, S *int64 }
	var msg struct {
		Payload struct {
			Before, After *row
			Op            string
		}
	}
	str := func(r *row) string {
		f := func(p *int64) string {
			if p == nil {
				return "NULL"
			}
			return fmt.Sprint(*p)
		}
		return f(r.G) + "|" + f(r.N) + "|" + f(r.S)
	}
	byKey := map[string]string{}
	ops := map[string]int{}
	var got []string
	consumeUntil(t, addr, "dbz", 30*time.Second, func(rec *kgo.Record) {
		msg.Payload.Before, msg.Payload.After, msg.Payload.Op = nil, nil, ""
		if err := json.Unmarshal(rec.Value, &msg); err != nil {
			t.Fatalf("value %s: %v", rec.Value, err)
		}
		p := msg.Payload
		var key struct{ G *int64 }
		if err := json.Unmarshal(rec.Key, &key); err != nil || key.G == nil {
			t.Fatalf("key %s: %v", rec.Key, err)
		}
		ops[p.Op]++
		switch {
		case p.Op == "c" && p.Before == nil && p.After != nil:
			byKey[string(rec.Key)] = str(p.After)
		case p.Op == "u" && p.Before != nil && p.After != nil && *p.Before.G == *key.G && *p.After.G == *key.G:
			byKey[string(rec.Key)] = str(p.After)
		case p.Op == "d" && p.Before != nil && p.After == nil && *p.Before.G == *key.G:
			delete(byKey, string(rec.Key))
		default:
			t.Fatalf("malformed Debezium record: key %s value %s", rec.Key, rec.Value)
		}
	}, func() bool {
		got = got[:0]
		for _, v := range byKey {
			got = append(got, v)
		}
		slices.Sort(got)
		return slices.Equal(got, want)
	})
	if !slices.Equal(got, want) {
		t.Fatalf("topic replayed: %v\nview: %v", got, want)
	}
	if ops["c"] == 0 || ops["u"] == 0 || ops["d"] == 0 {
		t.Fatalf("ops seen: %v, want c, u and d", ops)
	}
}
