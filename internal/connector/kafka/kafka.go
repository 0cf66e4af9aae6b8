package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runneldb/runnel/internal/connector"
)

func init() {
	connector.RegisterExternal("kafka", New)
	connector.RegisterColumns("kafka", ProtobufColumns)
	connector.RegisterKnownOptions("kafka", func(k string) bool {
		switch k {
		case "topic", "scan.startup.mode", "scan.startup.timestamp.millis", "scan.startup.timestamp_millis":
			return true
		}
		// properties.* are librdkafka's client settings: the ones Runnel
		// uses are read above, the rest do not change what is read.
		return strings.HasPrefix(k, "properties.")
	})
}

// Tuning.
var (
	// requestTimeout bounds a metadata or list-offsets request: an
	// unreachable broker fails the attempt (retried with backoff by the
	// executor and shown as the source's status) instead of hanging.
	requestTimeout = 10 * time.Second
	// maxPollRecords bounds the records of one Batch.
	maxPollRecords = 4096
	// fetchPartitionBytes is the most one fetch returns of a partition.
	// franz-go's default (1 MiB) made reading latency-bound: against
	// kfake, 200,000 Nexmark bids read at 100k records/s with 1 MiB
	// fetches and 280k+/s with 8 MiB ones, the process mostly idle in
	// between (docs/benchmarks.md). Each split has its own client, which
	// buffers about one fetch ahead, so memory is ~2 × this per split.
	fetchPartitionBytes int32 = 8 << 20
)

// Source is a configured Kafka topic (connector.External).
type Source struct {
	cfg  *Config
	spec connector.Spec
	log  *slog.Logger

	mu    sync.Mutex
	admin *kgo.Client // metadata and offsets; created on first use
}

// New checks spec (connector.ExternalFactory); it connects to nothing.
func New(spec connector.Spec) (connector.External, error) {
	cfg, err := ParseOptions(spec)
	if err != nil {
		return nil, err
	}
	if _, err := newDecoder(cfg, spec); err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, spec: spec, log: spec.Log}, nil
}

func (s *Source) adminClient() (*kgo.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.cfg.Brokers...), kgo.DialTimeout(5 * time.Second), kgo.RequestRetries(2)}, s.cfg.Security...)...)
		if err != nil {
			return nil, err
		}
		s.admin = cl
	}
	return s.admin, nil
}

// Splits lists the topic's partitions: split ID is the partition number,
// and so is its Ordinal (partitions spread round-robin over actors).
func (s *Source) Splits(ctx context.Context) ([]connector.Split, error) {
	cl, err := s.adminClient()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(s.cfg.Topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafka %v: metadata: %w", s.cfg.Brokers, err)
	}
	var out []connector.Split
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return nil, fmt.Errorf("kafka topic %q: %w", s.cfg.Topic, err)
		}
		for _, p := range rt.Partitions {
			out = append(out, connector.Split{ID: strconv.Itoa(int(p.Partition)), Ordinal: int(p.Partition)})
		}
	}
	return out, nil
}

// listOffset asks for the offset of partition at ts: -2 earliest, -1 the
// end (the last stable offset, read_committed), or a timestamp in
// milliseconds (the first record at or after it; the end when none).
func (s *Source) listOffset(ctx context.Context, partition int32, ts int64) (int64, error) {
	cl, err := s.adminClient()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1 // read_committed: the end is the last stable offset
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = s.cfg.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("kafka %v: list offsets: %w", s.cfg.Brokers, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("kafka topic %q partition %d: list offsets: %w", s.cfg.Topic, partition, err)
			}
			if p.Offset < 0 && ts >= 0 {
				return s.listOffset(ctx, partition, -1) // no record that late: the end
			}
			return p.Offset, nil
		}
	}
	return 0, fmt.Errorf("kafka topic %q partition %d: list offsets: no answer", s.cfg.Topic, partition)
}

// encodeState is a split's state: the offset of the next record to read.
func encodeState(next int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(next)) }

func decodeState(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("kafka split state of %d bytes; want 8", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// OpenSplit starts reading a partition at the committed offset, or — for
// a partition never read — where scan.startup.* says (resolved now to an
// offset and reported in the first Batch, so that a restart before any
// record arrives resumes at the same place).
func (s *Source) OpenSplit(ctx context.Context, sp connector.Split, state []byte) (connector.SplitStream, error) {
	p64, err := strconv.ParseInt(sp.ID, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("kafka split %q is not a partition number", sp.ID)
	}
	partition := int32(p64)
	dec, err := newDecoder(s.cfg, s.spec)
	if err != nil {
		return nil, err
	}
	st := &stream{src: s, partition: partition, dec: dec}
	if state != nil {
		if st.next, err = decodeState(state); err != nil {
			return nil, err
		}
	} else {
		ts := int64(-2)
		switch {
		case s.cfg.StartMillis >= 0:
			ts = s.cfg.StartMillis
		case s.cfg.Latest:
			ts = -1
		}
		if st.next, err = s.listOffset(ctx, partition, ts); err != nil {
			return nil, err
		}
		st.announce = true
	}
	// The end now, to report CaughtUp at once when there is nothing to read
	// (and to fail fast when the broker is unreachable).
	end, err := s.listOffset(ctx, partition, -1)
	if err != nil {
		return nil, err
	}
	st.caughtUp = st.next >= end
	st.announce = st.announce || st.caughtUp
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.DialTimeout(5 * time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.Topic: {partition: kgo.NewOffset().At(st.next)}}),
		// I7: only committed transactions' records; the markers are kept
		// so the offset (and the state) moves past them.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.FetchMaxPartitionBytes(fetchPartitionBytes),
		kgo.FetchMaxBytes(fetchPartitionBytes),
	}, s.cfg.Security...)...)
	if err != nil {
		return nil, err
	}
	st.cl = cl
	return st, nil
}

// Close closes the metadata client.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
	return nil
}

// stream reads one partition.
type stream struct {
	src       *Source
	partition int32
	dec       decoder // this stream's own (decoders keep parser state)
	cl        *kgo.Client
	next      int64 // offset of the next record
	// announce: the first Read returns the start state (and caughtUp)
	// without waiting for records.
	announce bool
	caughtUp bool
}

func (st *stream) Read(ctx context.Context) (connector.Batch, error) {
	if st.announce {
		st.announce = false
		return connector.Batch{State: encodeState(st.next), CaughtUp: st.caughtUp}, nil
	}
	for {
		fetches := st.cl.PollRecords(ctx, maxPollRecords)
		if fetches.IsClientClosed() {
			return connector.Batch{}, errors.New("kafka client closed")
		}
		if err := ctx.Err(); err != nil {
			return connector.Batch{}, err
		}
		var ferr error
		fetches.EachError(func(topic string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("kafka topic %q partition %d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return connector.Batch{}, ferr
		}
		var b connector.Batch
		start := st.next
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				if r.Offset < st.next {
					continue
				}
				st.next = r.Offset + 1
				if r.Attrs.IsControl() {
					continue // a transaction marker
				}
				b.Bytes += int64(len(r.Key) + len(r.Value))
				if err := st.dec.decode(r, &b.Changes); err != nil {
					b.Skipped = append(b.Skipped, connector.Skipped{
						Where:  fmt.Sprintf("topic %s partition %d offset %d", r.Topic, r.Partition, r.Offset),
						Reason: err.Error(),
					})
				}
			}
			// Caught up is judged from the broker's last stable offset
			// (read_committed), never from the last record's offset + 1:
			// a partition ending in a transaction marker would stall.
			end := p.HighWatermark
			if lso := p.LastStableOffset; lso >= 0 {
				end = lso
			}
			b.CaughtUp = st.next >= end
			b.Lag = &connector.Lag{Messages: max(0, end-st.next)}
		})
		if st.next == start {
			continue // nothing new (an empty fetch)
		}
		b.State = encodeState(st.next)
		return b, nil
	}
}

// Committed: Kafka offsets live only in Runnel's checkpoint; nothing is
// acknowledged to the broker (no consumer group).
func (st *stream) Committed([]byte) {}

func (st *stream) Close() error {
	st.cl.Close()
	return nil
}
