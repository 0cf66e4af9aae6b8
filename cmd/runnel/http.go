package main

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/runneldb/runnel/internal/ingest"
	"github.com/runneldb/runnel/internal/server"
)

// startHTTP serves the HTTP APIs on addr: the time-series ingest
// (internal/ingest, GreptimeDB's paths). It returns once the listener is
// bound, so a bad address fails the start.
func startHTTP(addr string, srv *server.Server, log *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	ingest.Register(mux, srv.IngestWriter())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http listener stopped", "addr", addr, "err", err)
		}
	}()
	log.Info("http listening", "addr", ln.Addr().String())
	return hs, nil
}
