package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// readTopic reads topic from its start until no record came for a few
// polls after want records were seen (a duplicate shows as a record more),
// or limit passed. readCommitted picks the isolation level.
func readTopic(t *testing.T, addr, topic string, want int, readCommitted bool, limit time.Duration) []*kgo.Record {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if readCommitted {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	deadline, quiet := time.Now().Add(limit), 0
	for time.Now().Before(deadline) && quiet < 4 {
		fctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		fs := cl.PollFetches(fctx)
		cancel()
		n := len(out)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
		if len(out) >= want && len(out) == n {
			quiet++
		}
	}
	return out
}

// TestKafkaEOSSinkCrashPoints (I8; I7 end to end): a Runnel subprocess
// whose is_exactly_once kafka sink SIGKILLs the process at one point of
// an epoch's delivery (sink.CrashPoint): after every change was produced
// into the Kafka transaction and before Commit (sink/before-commit); after
// the epoch's offset was staged in the transaction and before the
// transaction commits (sink-kafka/before-end-txn); after the transaction
// committed and before the log's rows were released
// (sink/after-commit). The broker (kfake) lives in the test process. After
// the restart (the new producer fences the old one and aborts its open
// transaction; the worker skips the epochs the group's offset covers) and
// more rows, a read_committed consumer sees every row of the table exactly
// once. A read_uncommitted consumer proves the kill came where it should:
// at the first two points it sees the aborted first attempt as well, at
// the third nothing twice.
func TestKafkaEOSSinkCrashPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: skipped with -short")
	}
	bin := buildRunnel(t)
	for _, point := range []string{sink.PointBeforeCommit, "sink-kafka/before-end-txn", sink.PointAfterCommit} {
		t.Run(strings.ReplaceAll(point, "/", "_"), func(t *testing.T) {
			broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "eos"))
			if err != nil {
				t.Fatal(err)
			}
			defer broker.Close()
			addr := broker.ListenAddrs()[0]
			work := t.TempDir()
			data, logPath := filepath.Join(work, "data"), filepath.Join(work, "runnel.log")
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("server log tail:\n%s", tail(logPath))
				}
			})
			p := &proc{servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: data, LogPath: logPath,
				Env: []string{sink.CrashPointEnv + "=" + point + "@eos_sink"}})}
			p.waitReady(t, readyLimit)
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, p.url())
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{
				"CREATE TABLE ev (id int, v int) APPEND ONLY",
				fmt.Sprintf(`CREATE SINK eos_sink FROM ev WITH (connector = 'kafka', properties.bootstrap.server = '%s',
					topic = 'eos', type = 'append-only', is_exactly_once = 'true') FORMAT PLAIN ENCODE JSON`, addr),
				"INSERT INTO ev SELECT i, i * 3 FROM generate_series(1, 100) g(i)",
			} {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			_, _ = conn.Exec(ctx, "FLUSH") // the process may die under it
			conn.Close(ctx)
			select {
			case <-p.Done():
			case <-time.After(time.Minute):
				t.Fatalf("the server did not reach crash point %s", point)
			}
			if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "test crash point "+point) {
				t.Fatalf("the server exited without reaching %s", point)
			}

			p = startRunnel(t, bin, data, logPath)
			p.waitReady(t, readyLimit)
			if conn, err = pgx.Connect(ctx, p.url()); err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, q := range []string{"INSERT INTO ev SELECT i, i * 3 FROM generate_series(101, 150) g(i)", "FLUSH"} {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			ids := func(recs []*kgo.Record) []int {
				var out []int
				for _, r := range recs {
					var m struct{ ID, V int }
					if err := json.Unmarshal(r.Value, &m); err != nil || m.V != 3*m.ID {
						t.Fatalf("record %s: %v", r.Value, err)
					}
					out = append(out, m.ID)
				}
				slices.Sort(out)
				return out
			}
			got := ids(readTopic(t, addr, "eos", 150, true, 90*time.Second))
			want := make([]int, 150)
			for i := range want {
				want[i] = i + 1
			}
			if !slices.Equal(got, want) {
				t.Fatalf("read_committed: %d records, want ids 1..150 once each (first ids %v)", len(got), got[:min(len(got), 20)])
			}
			all := readTopic(t, addr, "eos", 150, false, 30*time.Second)
			switch {
			case point == sink.PointAfterCommit && len(all) != 150:
				t.Fatalf("read_uncommitted after a kill past the commit: %d records, want 150", len(all))
			case point != sink.PointAfterCommit && len(all) < 250:
				t.Fatalf("read_uncommitted: %d records, want the aborted attempt's 100 besides the 150 (the kill came before anything was produced?)", len(all))
			}
			t.Logf("%s: read_committed %d records, read_uncommitted %d", point, len(got), len(all))
		})
	}
}
