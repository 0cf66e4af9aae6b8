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
// Delivery is at least once by default: the producer is idempotent (no
// duplicates from its own retries) and an epoch counts as delivered once
// every record of it is acknowledged by all in-sync replicas, but an epoch
// delivered and not yet truncated when Runnel dies is produced again after
// the restart. Consumers that deduplicate by key (UPSERT, DEBEZIUM) see
// exactly the view.
//
// is_exactly_once = 'true' makes it exactly once for read_committed
// consumers (I8): each delivered epoch is one Kafka transaction of a
// transactional producer whose id derives from the sink (runnel-sink-<id>-
// <database.schema.name>), and the same transaction commits the epoch as
// the offset of partition 0 of the topic in a consumer group of the same
// name, which no consumer joins: the group's committed offset is the
// target's record of the last epoch it holds, written atomically with the
// epoch's records. Open first initialises the producer id — which fences
// an older incarnation of the sink and aborts its open transaction, so a
// crash during an epoch's produce leaves nothing a read_committed consumer
// sees — then reads that offset (require_stable: a commit in flight is
// waited for), and the worker skips the epochs it covers. A crash between
// the commit and the log's truncation therefore repeats nothing.
package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	kafkasrc "github.com/runneldb/runnel/internal/connector/kafka"
	"github.com/runneldb/runnel/internal/sink"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func init() {
	sink.Register("kafka", sink.Connector{New: New, NeedsFormat: true, Known: func(k string) bool {
		// properties.* are librdkafka's client settings: the ones Runnel
		// uses are read by kafkasrc.ClientSecurity, the rest change nothing.
		return k == "topic" || k == "is_exactly_once" || strings.HasPrefix(k, "properties.")
	}})
}

type target struct {
	cfg     *sink.Config
	brokers []string
	topic   string
	format  string
	client  *kgo.Client
	// exactlyOnce: is_exactly_once = 'true'; txnID names the
	// transactional producer and the consumer group holding the epoch.
	exactlyOnce bool
	txnID       string
	topicID     [16]byte // for TxnOffsetCommit v6+, which names topics by id
	// security are the SASL/SSL client options (kafkasrc.ClientSecurity).
	security []kgo.Opt
}

// txnTimeout is the transaction timeout: an epoch's records are produced
// in well under it, and a crashed incarnation's transaction is aborted by
// the broker after it if no new incarnation fences it first.
const txnTimeout = 60 * time.Second

// epochMetadata marks the group offset that is an epoch, not a position.
const epochMetadata = "runnel sink: last delivered epoch"

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
	sec, err := kafkasrc.ClientSecurity(fmt.Sprintf("sink %q", cfg.Name), cfg.Options)
	if err != nil {
		return nil, err
	}
	t.security = sec
	if cfg.Encode != "JSON" {
		return nil, sqlerr.Errorf(sqlerr.FeatureNotSupported, "sink %q: ENCODE %s is not supported (ENCODE JSON)", cfg.Name, cfg.Encode)
	}
	switch strings.ToLower(cfg.Options["is_exactly_once"]) {
	case "", "false":
	case "true":
		t.exactlyOnce = true
		t.txnID = fmt.Sprintf("runnel-sink-%d-%s", cfg.ID, cfg.Name)
	default:
		return nil, bad("is_exactly_once must be 'true' or 'false', not %q", cfg.Options["is_exactly_once"])
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
// exist. Exactly once: a transactional producer, and the last epoch the
// topic holds (see the package comment).
func (t *target) Open(ctx context.Context) (uint64, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(t.brokers...), kgo.DefaultProduceTopic(t.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(30 * time.Second)}
	if t.exactlyOnce {
		opts = append(opts, kgo.TransactionalID(t.txnID), kgo.TransactionTimeout(txnTimeout))
	}
	opts = append(opts, t.security...)
	c, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, fmt.Errorf("sink %s: kafka client: %w", t.cfg.Name, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Ping(pctx); err != nil {
		c.Close()
		return 0, fmt.Errorf("sink %s: kafka %s: %w", t.cfg.Name, strings.Join(t.brokers, ","), err)
	}
	var delivered uint64
	if t.exactlyOnce {
		if delivered, err = t.recover(pctx, c); err != nil {
			c.Close()
			return 0, fmt.Errorf("sink %s: kafka %s: %w", t.cfg.Name, strings.Join(t.brokers, ","), err)
		}
	}
	t.client = c
	return delivered, nil
}

// recover fences older incarnations of the transactional producer (their
// open transaction is aborted) and reads the last epoch committed.
func (t *target) recover(ctx context.Context, c *kgo.Client) (uint64, error) {
	if _, _, err := c.ProducerID(ctx); err != nil {
		return 0, fmt.Errorf("init transactional producer %s: %w", t.txnID, err)
	}
	adm := kadm.NewClient(c)
	topics, err := adm.ListTopics(ctx, t.topic)
	if err == nil {
		err = topics.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("topic %s: %w", t.topic, err)
	}
	t.topicID = topics[t.topic].ID
	offs, err := adm.FetchOffsets(kadm.RequireStable(ctx), t.txnID)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return 0, nil // nothing delivered yet (Kafka answers "no offset"; kfake this)
	}
	if err != nil {
		return 0, fmt.Errorf("read the delivered epoch (group %s): %w", t.txnID, err)
	}
	o, ok := offs.Lookup(t.topic, 0)
	if !ok || o.Err != nil || o.At < 0 {
		if ok && o.Err != nil {
			return 0, fmt.Errorf("read the delivered epoch (group %s): %w", t.txnID, o.Err)
		}
		return 0, nil
	}
	return uint64(o.At), nil
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
	x := &txn{t: t, epoch: epoch}
	if t.exactlyOnce {
		if err := t.client.BeginTransaction(); err != nil {
			return nil, err
		}
		x.open = true
	}
	return x, nil
}

type txn struct {
	t     *target
	epoch uint64
	open  bool // a Kafka transaction is open
}

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
// did; Flush covers anything buffered). Exactly once: the epoch goes into
// the transaction as the group's offset, and the transaction commits.
func (x *txn) Commit(ctx context.Context) error {
	t := x.t
	if !x.open {
		return t.client.Flush(ctx)
	}
	if err := t.commitEpoch(ctx, x.epoch); err != nil {
		return fmt.Errorf("record epoch %d in group %s: %w", x.epoch, t.txnID, err)
	}
	sink.CrashPoint("sink-kafka/before-end-txn", t.cfg.Name)
	x.open = false
	// An error here is ambiguous (the commit may have landed): the worker
	// reconnects, and Open reads which epoch the topic holds.
	return t.client.EndTransaction(ctx, kgo.TryCommit)
}

// Rollback aborts an open transaction.
func (x *txn) Rollback() {
	if !x.open {
		return
	}
	x.open = false
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = x.t.client.EndTransaction(ctx, kgo.TryAbort)
}

// commitEpoch adds the sink's group to the open transaction and stages
// the epoch as its offset of partition 0 of the topic (a standalone
// commit: generation -1, no member), applied when the transaction commits.
// franz-go commits transactional offsets only for a group it consumes in,
// so the two requests are issued here.
func (t *target) commitEpoch(ctx context.Context, epoch uint64) error {
	id, pepoch, err := t.client.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = t.txnID, id, pepoch, t.txnID
	aresp, err := add.RequestWith(ctx, t.client)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(aresp.ErrorCode); err != nil {
		return err
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = t.txnID, t.txnID, id, pepoch
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = t.topic, t.topicID
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, int64(epoch), -1
	meta := epochMetadata
	rp.Metadata = &meta
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, t.client)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}
