// Package kafka is the sink connector producing to a Kafka topic
// (github.com/twmb/franz-go), registered as "kafka":
//
//	CREATE SINK s FROM mv WITH (connector = 'kafka', properties.bootstrap.server = 'host:port',
//	    topic = 't', type = 'upsert', primary_key = 'id') FORMAT UPSERT ENCODE JSON
//
// Formats (values are JSON objects of the sink's columns; integers, floats
// and booleans as JSON numbers and booleans, every other type as its
// PostgreSQL text):
//   - FORMAT PLAIN ENCODE JSON: one record per insert (append-only sinks).
//   - FORMAT UPSERT ENCODE JSON: key = the primary_key columns as JSON, value
//     = the row, or null (a tombstone) when the key's row was deleted; per
//     delivered batch the last change of a key wins.
//   - FORMAT DEBEZIUM ENCODE JSON: key as UPSERT; value = {"payload":
//     {"before", "after", "op": "c" | "u" | "d"}}.
//
// Delivery is at least once: the producer is idempotent (no duplicates
// from its own retries) and an epoch counts as delivered once every record
// of it is acknowledged by all in-sync replicas, but an epoch delivered and
// not yet truncated when Runnel dies is produced again after the restart.
// Consumers that deduplicate by key (UPSERT, DEBEZIUM) see exactly the
// view. (An exactly-once mode with one Kafka transaction per epoch is not
// built yet.)
package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func init() {
	sink.Register("kafka", sink.Connector{New: New, NeedsFormat: true})
}

type target struct {
	cfg     *sink.Config
	brokers []string
	topic   string
	format  string
	client  *kgo.Client
}

// New checks a kafka sink's options.
func New(cfg *sink.Config) (sink.Target, error) {
	bad := func(format string, args ...any) error {
		return sqlerr.Errorf(sqlerr.InvalidParameterValue, "sink %q: "+format, append([]any{cfg.Name}, args...)...)
	}
	t := &target{cfg: cfg, topic: cfg.Options["topic"], format: cfg.Format}
	for _, b := range strings.Split(cfg.Options["properties.bootstrap.server"], ",") {
		if b = strings.TrimSpace(b); b != "" {
			t.brokers = append(t.brokers, b)
		}
	}
	if len(t.brokers) == 0 {
		return nil, bad("properties.bootstrap.server is required")
	}
	if t.topic == "" {
		return nil, bad("topic is required")
	}
	if cfg.Encode != "JSON" {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "sink %q: ENCODE %s is not supported (ENCODE JSON)", cfg.Name, cfg.Encode)
	}
	switch t.format {
	case "PLAIN":
		if cfg.Upsert() {
			return nil, bad("FORMAT PLAIN needs type = 'append-only' (FORMAT UPSERT or DEBEZIUM for an upsert sink)")
		}
	case "UPSERT", "DEBEZIUM":
		if !cfg.Upsert() {
			return nil, bad("FORMAT %s needs type = 'upsert' with a primary_key", t.format)
		}
	default:
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "sink %q: FORMAT %s is not supported (PLAIN, UPSERT or DEBEZIUM)", cfg.Name, t.format)
	}
	return t, nil
}

// Open implements sink.Target: a client with the idempotent producer
// (franz-go's default) and acks from all in-sync replicas; the topic must
// exist.
func (t *target) Open(ctx context.Context) (uint64, error) {
	c, err := kgo.NewClient(kgo.SeedBrokers(t.brokers...), kgo.DefaultProduceTopic(t.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		return 0, fmt.Errorf("sink %s: kafka client: %w", t.cfg.Name, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Ping(pctx); err != nil {
		c.Close()
		return 0, fmt.Errorf("sink %s: kafka %s: %w", t.cfg.Name, strings.Join(t.brokers, ","), err)
	}
	t.client = c
	return 0, nil
}

func (t *target) Close() error {
	if t.client != nil {
		t.client.Close()
		t.client = nil
	}
	return nil
}

func (t *target) Begin(ctx context.Context, epoch uint64) (sink.Txn, error) {
	if t.client == nil {
		return nil, sink.ErrClosed
	}
	return &txn{t: t}, nil
}

type txn struct{ t *target }

func (t *target) object(r types.Row, cols []int) json.RawMessage {
	return sink.AppendJSONObject(nil, t.cfg.Columns, r, cols)
}

func (t *target) all() []int { return sink.AllColumns(len(t.cfg.Columns)) }

func (x *txn) Write(ctx context.Context, changes []sink.Change) error {
	t := x.t
	var recs []*kgo.Record
	switch t.format {
	case "PLAIN":
		for _, c := range changes {
			if c.Op.IsInsert() {
				recs = append(recs, &kgo.Record{Value: t.object(c.Row, t.all())})
			}
		}
	case "UPSERT":
		for _, c := range lastPerKey(changes, t, t.cfg.Key) {
			r := &kgo.Record{Key: t.object(c.Row, t.cfg.Key)}
			if c.Op.IsInsert() {
				r.Value = t.object(c.Row, t.all())
			}
			recs = append(recs, r)
		}
	case "DEBEZIUM":
		for i := 0; i < len(changes); i++ {
			c := changes[i]
			p := map[string]any{"before": nil, "after": nil}
			switch c.Op {
			case types.OpInsert:
				p["op"], p["after"] = "c", t.object(c.Row, t.all())
			case types.OpDelete:
				p["op"], p["before"] = "d", t.object(c.Row, t.all())
			case types.OpUpdateDelete:
				if i+1 < len(changes) && changes[i+1].Op == types.OpUpdateInsert &&
					string(t.object(changes[i+1].Row, t.cfg.Key)) == string(t.object(c.Row, t.cfg.Key)) {
					p["op"], p["before"], p["after"] = "u", t.object(c.Row, t.all()), t.object(changes[i+1].Row, t.all())
					i++
				} else {
					p["op"], p["before"] = "d", t.object(c.Row, t.all())
				}
			case types.OpUpdateInsert:
				p["op"], p["after"] = "c", t.object(c.Row, t.all())
			}
			v, err := json.Marshal(map[string]any{"payload": p})
			if err != nil {
				return err
			}
			recs = append(recs, &kgo.Record{Key: t.object(c.Row, t.cfg.Key), Value: v})
		}
	}
	if len(recs) == 0 {
		return nil
	}
	return t.client.ProduceSync(ctx, recs...).FirstErr()
}

// lastPerKey keeps the last change of each key, in first-seen key order.
func lastPerKey(changes []sink.Change, t *target, key []int) []sink.Change {
	last := map[string]int{}
	var order []string
	for i, c := range changes {
		k := string(t.object(c.Row, key))
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = i
	}
	out := make([]sink.Change, len(order))
	for i, k := range order {
		out[i] = changes[last[k]]
	}
	return out
}

// Commit waits until every record is acknowledged (ProduceSync already
// did; Flush covers anything buffered).
func (x *txn) Commit(ctx context.Context) error { return x.t.client.Flush(ctx) }
func (x *txn) Rollback()                        {}
