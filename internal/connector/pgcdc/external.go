package pgcdc

import (
	"context"
	"fmt"
	"time"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

func init() {
	connector.RegisterExternal(Connector, New)
	connector.RegisterKnownOptions(Connector, func(k string) bool {
		switch k {
		case OptHost, OptPort, OptUser, OptPassword, OptDatabase, OptSchema, OptTable, OptSlot,
			OptPublication, OptCreatePublication, OptSSLMode, OptSSLRootCert:
			return true
		}
		return false
	})
}

// external is a CDC table as the connector framework sees it: one split
// (the table's slot) whose state is State.Encode().
type external struct {
	spec connector.Spec
	cfg  Config
	cols []Column
}

// New builds the connector of a CDC table from its options (the source's
// connection options, table.name, and the slot.name DDL pinned). It
// contacts nothing (DDL calls it to validate); Check does at CREATE.
func New(spec connector.Spec) (connector.External, error) {
	cfg, err := ParseTableOptions(spec.Options)
	if err != nil {
		return nil, err
	}
	if len(spec.PK) == 0 {
		return nil, sqlerr.Errorf(sqlerr.InvalidTableDefinition, "a postgres-cdc table needs a PRIMARY KEY (upstream %s); CREATE SOURCE with connector = 'postgres-cdc' is read through CREATE TABLE ... FROM source TABLE '...'", cfg.TableName())
	}
	if cfg.Slot == "" {
		return nil, badOption(OptSlot, "required")
	}
	cols, err := SpecColumns(spec)
	if err != nil {
		return nil, err
	}
	return &external{spec: spec, cfg: cfg, cols: cols}, nil
}

func (e *external) Splits(context.Context) ([]connector.Split, error) {
	return []connector.Split{{ID: "slot:" + e.cfg.Slot}}, nil
}

func (e *external) OpenSplit(_ context.Context, _ connector.Split, state []byte) (connector.SplitStream, error) {
	var committed *State
	if state != nil {
		s, err := DecodeState(state)
		if err != nil {
			return nil, err
		}
		committed = &s
	}
	r := Start(e.cfg, e.cols, e.spec.PK, committed, Options{Logger: e.spec.Log, Name: e.spec.Name})
	return &splitStream{r: r}, nil
}

func (e *external) Close() error { return nil }

// splitStream adapts a Reader to connector.SplitStream.
type splitStream struct {
	r *Reader
	// carry is a batch cut at a truncate, delivered by the next Read.
	carry *Batch
	// skipped is BadRows as last reported.
	skipped int64
	// noticed is how many of the reader's Status.Notices were reported.
	noticed int
}

// errorPoll is how often Read looks at the reader's status while no batch
// comes: a failing upstream is surfaced as Read's error, so the source's
// status shows it (the reader retries on its own meanwhile).
const errorPoll = 200 * time.Millisecond

func (s *splitStream) Read(ctx context.Context) (connector.Batch, error) {
	var b Batch
	if s.carry != nil {
		b, s.carry = *s.carry, nil
	} else {
		t := time.NewTicker(errorPoll)
		defer t.Stop()
	wait:
		for {
			select {
			case b = <-s.r.Batches():
				break wait
			case <-t.C:
				if st := s.r.Status(); st.Err != "" && st.Retries > 0 {
					return connector.Batch{}, fmt.Errorf("postgres-cdc %s: %s", s.r.cfg.TableName(), st.Err)
				}
			case <-ctx.Done():
				return connector.Batch{}, ctx.Err()
			}
		}
	}
	out := connector.Batch{Truncate: len(b.Changes) > 0 && b.Changes[0].Op == OpTruncate}
	changes := b.Changes
	if out.Truncate {
		changes = changes[1:]
	}
	// A truncate later in the batch starts the next one.
	for i, c := range changes {
		if c.Op == OpTruncate {
			s.carry = &Batch{Changes: changes[i:], State: b.State}
			changes = changes[:i]
			break
		}
	}
	if s.carry == nil {
		out.State = b.State.Encode()
	}
	if end := s.r.walEnd.Load(); end > 0 && b.State.Phase == PhaseStream {
		out.Lag = &connector.Lag{Bytes: int64(max(end, uint64(b.State.LSN)) - uint64(b.State.LSN))}
	}
	for _, c := range changes {
		switch {
		case c.Op == OpDelete:
			out.Changes.Append(types.OpDelete, c.Row)
		case c.Old == nil && c.Keep == nil:
			out.Changes.Append(types.OpInsert, c.Row)
		default:
			// An update whose key changed or that keeps unsent TOAST
			// values: the old key's row goes, and lends them.
			old := c.Old
			if old == nil {
				old = c.Row
			}
			if out.Unchanged == nil {
				out.Unchanged = make([][]bool, out.Changes.Len())
			}
			out.Changes.Append(types.OpUpdateDelete, old)
			out.Changes.Append(types.OpUpdateInsert, c.Row)
			out.Unchanged = append(out.Unchanged, nil, c.Keep)
		}
		if out.Unchanged != nil && len(out.Unchanged) < out.Changes.Len() {
			out.Unchanged = append(out.Unchanged, nil)
		}
	}
	if n := s.r.BadRows.Load(); n > s.skipped {
		for range min(n-s.skipped, 100) {
			out.Skipped = append(out.Skipped, connector.Skipped{Where: fmt.Sprintf("%s at %s", s.r.cfg.TableName(), b.State.LSN),
				Reason: "malformed replication message or primary-key value not of the column's type"})
		}
		s.skipped = n
	}
	st := s.r.Status()
	if len(st.Notices) > s.noticed {
		out.Notices = st.Notices[s.noticed:]
		s.noticed = len(st.Notices)
	}
	out.CaughtUp = st.Phase == PhaseStream && len(s.r.Batches()) == 0
	return out, nil
}

func (s *splitStream) Committed(state []byte) {
	if st, err := DecodeState(state); err == nil {
		s.r.Committed(st)
	}
}

func (s *splitStream) Close() error {
	s.r.Close()
	return nil
}
