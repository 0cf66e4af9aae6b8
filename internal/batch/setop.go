package batch

import (
	"context"
	"strings"

	"github.com/runneldb/runnel/internal/sql/plan"
	"github.com/runneldb/runnel/internal/types"
)

// setOpExec runs UNION / INTERSECT / EXCEPT [ALL]. Rows compare as
// "not distinct" (NULL equals NULL), as set operations do in SQL.
type setOpExec struct {
	r           *runner
	node        *plan.SetOp
	left, right executor

	started  bool
	onRight  bool
	rightCnt map[string]int
	emitted  map[string]struct{}
	buf      []byte
	c        canceler
	mem      memHold
}

func (s *setOpExec) Next(ctx context.Context) (types.Row, error) {
	n := s.node
	if !s.started {
		s.started = true
		s.mem.a = s.r.mem
		s.emitted = map[string]struct{}{}
		if n.Kind != plan.Union {
			s.rightCnt = map[string]int{}
			for {
				if err := s.c.check(ctx); err != nil {
					return nil, err
				}
				row, err := s.right.Next(ctx)
				if err != nil {
					return nil, err
				}
				if row == nil {
					break
				}
				s.buf = rowKey(s.buf, row)
				if _, ok := s.rightCnt[string(s.buf)]; !ok {
					if err := s.mem.grow(strings.ToUpper(n.Kind.String()), mapEntrySize+int64(len(s.buf))); err != nil {
						return nil, err
					}
				}
				s.rightCnt[string(s.buf)]++
			}
		}
	}
	for {
		if err := s.c.check(ctx); err != nil {
			return nil, err
		}
		var row types.Row
		var err error
		if !s.onRight {
			row, err = s.left.Next(ctx)
			if err != nil {
				return nil, err
			}
			if row == nil {
				if n.Kind != plan.Union {
					return nil, nil
				}
				s.onRight = true
				continue
			}
		} else {
			row, err = s.right.Next(ctx)
			if err != nil || row == nil {
				return nil, err
			}
		}
		if n.Kind == plan.Union && n.All {
			return row, nil
		}
		s.buf = rowKey(s.buf, row)
		k := string(s.buf)
		switch n.Kind {
		case plan.Union:
			if _, dup := s.emitted[k]; dup {
				continue
			}
			if err := s.mem.grow(strings.ToUpper(n.Kind.String()), mapEntrySize+int64(len(k))); err != nil {
				return nil, err
			}
			s.emitted[k] = struct{}{}
			return row, nil
		case plan.Intersect:
			if s.rightCnt[k] == 0 {
				continue
			}
			if n.All {
				s.rightCnt[k]--
				return row, nil
			}
			if _, dup := s.emitted[k]; dup {
				continue
			}
			if err := s.mem.grow(strings.ToUpper(n.Kind.String()), mapEntrySize+int64(len(k))); err != nil {
				return nil, err
			}
			s.emitted[k] = struct{}{}
			return row, nil
		case plan.Except:
			if n.All {
				if s.rightCnt[k] > 0 {
					s.rightCnt[k]--
					continue
				}
				return row, nil
			}
			if s.rightCnt[k] > 0 {
				continue
			}
			if _, dup := s.emitted[k]; dup {
				continue
			}
			if err := s.mem.grow(strings.ToUpper(n.Kind.String()), mapEntrySize+int64(len(k))); err != nil {
				return nil, err
			}
			s.emitted[k] = struct{}{}
			return row, nil
		}
	}
}

func (s *setOpExec) Close() {
	s.left.Close()
	s.right.Close()
	s.mem.release()
}
