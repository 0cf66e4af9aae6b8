package datagen

import (
	"time"

	"github.com/runneldb/runnel/internal/connector"
)

func init() { connector.Register("datagen", newSource) }

// maxChunk bounds datagen chunks (RisingWave's default chunk size).
const maxChunk = 1024

type source struct{ g *Generator }

func newSource(columns []connector.Column, options map[string]string) (connector.Source, error) {
	opts := map[string]string{}
	for k, v := range options {
		if k != "connector" {
			opts[k] = v
		}
	}
	cfg, err := ParseOptions(columns, opts)
	if err != nil {
		return nil, err
	}
	g, err := NewGenerator(cfg)
	if err != nil {
		return nil, err
	}
	return &source{g: g}, nil
}

func (s *source) Splits() int                   { return max(1, s.g.cfg.SplitNum) }
func (s *source) StartPosition(split int) int64 { return StartPosition(split) }
func (s *source) MaxChunk() int                 { return maxChunk }
func (s *source) Gap() time.Duration {
	if s.g.cfg.RowsPerSecond <= 0 {
		return 0
	}
	return connector.GapForRate(s.g.cfg.RowsPerSecond)
}
func (s *source) Open(split int, pos int64) (connector.SplitReader, error) {
	return s.g.NewReader(split, s.Splits(), pos)
}
