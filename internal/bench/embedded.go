package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runneldb/runnel/internal/server"
)

// embedded is a Runnel server in this process on a loopback port, with its
// data in a temporary directory that close removes.
type embedded struct {
	srv *server.Server
	url string
	dir string
}

func startEmbedded(ctx context.Context, log *slog.Logger, cfgs ...func(*server.Config)) (*embedded, error) {
	dir, err := os.MkdirTemp("", "runnel-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: data dir: %w", err)
	}
	cfg := server.Config{DataDir: dir, BarrierInterval: time.Second, Logger: log}
	for _, fn := range cfgs {
		fn(&cfg)
	}
	srv, err := server.Open(ctx, cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: open server: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: listen: %w", err)
	}
	go srv.Serve(ln)
	return &embedded{srv: srv, url: fmt.Sprintf("postgres://root@%s/dev?sslmode=disable", ln.Addr()), dir: dir}, nil
}

func (e *embedded) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, e.url)
	if err != nil {
		return nil, fmt.Errorf("bench: connect to runnel: %w", err)
	}
	return conn, nil
}

func (e *embedded) close() {
	e.srv.Close()
	os.RemoveAll(e.dir)
}

// settle waits until everything written is committed and the storage
// engine has no compaction running or due (at most timeout).
func (e *embedded) settle(ctx context.Context, timeout time.Duration) error {
	in := e.srv.Internals()
	if err := in.Epochs.Flush(ctx); err != nil {
		return fmt.Errorf("bench: flush before settling: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for !in.Store.CompactionIdle() {
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: compaction still busy after %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
