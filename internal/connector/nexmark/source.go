package nexmark

import (
	"fmt"
	"time"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/sqlerr"
)

func init() { connector.Register("nexmark", newSource) }

type source struct {
	g *Generator
	t TableType
}

func newSource(columns []connector.Column, options map[string]string) (connector.Source, error) {
	opts := map[string]string{}
	for k, v := range options {
		if k != "connector" {
			opts[k] = v
		}
	}
	cfg, t, err := ParseOptions(opts)
	if err != nil {
		return nil, err
	}
	want := t.Columns()
	if len(columns) != len(want) {
		return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "nexmark table type %s has %d columns; the relation declares %d", t, len(want), len(columns))
	}
	for i, c := range columns {
		if c.Type.Kind != want[i].Type.Kind {
			return nil, sqlerr.Errorf(sqlerr.DatatypeMismatch, "nexmark %s column %d (%s) must be %s, not %s", t, i+1, want[i].Name, want[i].Type, c.Type)
		}
	}
	return &source{g: NewGenerator(cfg), t: t}, nil
}

func (s *source) Splits() int                   { return s.g.cfg.SplitNum }
func (s *source) StartPosition(split int) int64 { return StartPosition(split) }
func (s *source) Gap() time.Duration            { return s.g.cfg.MinEventGap }
func (s *source) MaxChunk() int                 { return s.g.cfg.MaxChunkSize }
func (s *source) Open(split int, pos int64) (connector.SplitReader, error) {
	r, err := s.g.NewReader(s.t, split, s.g.cfg.SplitNum, pos)
	if err != nil {
		return nil, fmt.Errorf("nexmark %s: %w", s.t, err)
	}
	return r, nil
}
