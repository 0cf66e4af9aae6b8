package exec

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/runneldb/runnel/internal/panics"
	"github.com/runneldb/runnel/internal/stream"
)

// aligner reads several input executors and aligns their barriers: a
// chunk from any input is returned as soon as it arrives; once an input
// delivers a barrier it is not read again until every input has delivered
// that barrier, which is then returned once.
//
// Each input runs its Next in a pump goroutine, one call per request, so
// that the inputs are read concurrently. Blocking on one input while the
// other is full would deadlock a self-join: the shared upstream blocks
// sending to the unread side and never reaches the barrier the read side
// waits for.
//
//	left:  c1 c2 B1 ............. c5
//	right: c3 ....... c4 B1 c6
//	out:   c1 c3 c2 c4 B1 (left not read between its B1 and right's B1)
//
// A pump only calls Next when asked, so after the executor stops (close)
// no pump reads further; a pump blocked inside Next ends with the actor's
// context.
type aligner struct {
	identity string
	pumps    []*pump
	started  bool
	blocked  []bool
	nBlocked int
	barrier  *stream.Barrier
	cases    []reflect.SelectCase
	caseIdx  []int
	// watermarks: return inputs' watermarks (like chunks) instead of
	// dropping them.
	watermarks bool
}

type pump struct {
	name string // "<identity> input <i>", for errors
	in   stream.Executor
	req  chan struct{}
	resp chan pumpResult
	busy bool // a request is outstanding
}

type pumpResult struct {
	msg stream.Message
	err error
}

func newAligner(identity string, inputs []stream.Executor) *aligner {
	a := &aligner{identity: identity, blocked: make([]bool, len(inputs))}
	for i, in := range inputs {
		a.pumps = append(a.pumps, &pump{name: fmt.Sprintf("%s input %d", identity, i), in: in, req: make(chan struct{}, 1), resp: make(chan pumpResult, 1)})
	}
	return a
}

// pumpSite names the pumps for panics.Arm.
const pumpSite = "stream.pump"

func (p *pump) run(ctx context.Context) {
	for {
		select {
		case _, ok := <-p.req:
			if !ok {
				return
			}
		case <-ctx.Done():
			return
		}
		// The input's executors run on this goroutine, not the actor's:
		// a panic in them is caught here and becomes the actor's error,
		// so the actor fails and its group recovers (I6, I9), instead of
		// the process ending.
		var m stream.Message
		err := panics.Catch(pumpSite, func() (err error) {
			m, err = p.in.Next(ctx)
			return err
		})
		if pe := (*panics.Error)(nil); errors.As(err, &pe) {
			err = fmt.Errorf("%s: %w", p.name, err)
		}
		p.resp <- pumpResult{msg: m, err: err} // buffered: never blocks
		if err != nil {
			return
		}
	}
}

// next returns (input index, chunk or watermark message) or (-1, aligned
// barrier).
func (a *aligner) next(ctx context.Context) (int, stream.Message, error) {
	if !a.started {
		a.started = true
		for _, p := range a.pumps {
			// The pumps read ahead of the actor: their waits are not its.
			go p.run(stream.WithoutStateReports(ctx))
		}
	}
	for {
		a.cases = a.cases[:0]
		a.caseIdx = a.caseIdx[:0]
		for i, p := range a.pumps {
			if a.blocked[i] {
				continue
			}
			if !p.busy {
				p.busy = true
				p.req <- struct{}{}
			}
			a.cases = append(a.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(p.resp)})
			a.caseIdx = append(a.caseIdx, i)
		}
		// Try without blocking first: only an actual wait is reported.
		a.cases = append(a.cases, reflect.SelectCase{Dir: reflect.SelectDefault})
		chosen, v, _ := reflect.Select(a.cases)
		if chosen == len(a.cases)-1 {
			if a.nBlocked > 0 {
				stream.ReportState(ctx, &stream.StateAligning)
			} else {
				stream.ReportState(ctx, &stream.StateWaitingInput)
			}
			a.cases[len(a.cases)-1] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}
			if chosen, v, _ = reflect.Select(a.cases); chosen == len(a.cases)-1 {
				return 0, stream.Message{}, ctx.Err()
			}
		}
		i := a.caseIdx[chosen]
		a.pumps[i].busy = false
		r := v.Interface().(pumpResult)
		if r.err != nil {
			return 0, stream.Message{}, r.err
		}
		if r.msg.Chunk != nil {
			stream.ReportState(ctx, &stream.StateProcessing)
			return i, r.msg, nil
		}
		if r.msg.Watermark != nil {
			if a.watermarks {
				return i, r.msg, nil
			}
			continue // a union does not use watermarks
		}
		b := r.msg.Barrier
		if a.barrier == nil {
			a.barrier = b
		} else if a.barrier.Curr != b.Curr || a.barrier.Prev != b.Prev {
			return 0, stream.Message{}, fmt.Errorf("%s: input %d delivered %s while aligning %s", a.identity, i, b, a.barrier)
		}
		a.blocked[i] = true
		a.nBlocked++
		if a.nBlocked == len(a.pumps) {
			out := a.barrier
			a.barrier = nil
			a.nBlocked = 0
			clear(a.blocked)
			stream.ReportState(ctx, &stream.StateBarrier)
			return -1, stream.Message{Barrier: out}, nil
		}
	}
}

// close ends the idle pumps (after the actor's stop barrier).
func (a *aligner) close() {
	for _, p := range a.pumps {
		close(p.req)
	}
	a.pumps = nil
}
