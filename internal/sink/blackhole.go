package sink

import "context"

// The blackhole connector discards everything it is given (benchmarks:
// the cost of a sink job and its log store without a target).
func init() {
	Register("blackhole", Connector{New: func(*Config) (Target, error) { return blackhole{}, nil }})
}

type blackhole struct{}

func (blackhole) Open(context.Context) (uint64, error)       { return 0, nil }
func (blackhole) Begin(context.Context, uint64) (Txn, error) { return blackhole{}, nil }
func (blackhole) Close() error                               { return nil }
func (blackhole) Write(context.Context, []Change) error      { return nil }
func (blackhole) Commit(context.Context) error               { return nil }
func (blackhole) Rollback()                                  {}
