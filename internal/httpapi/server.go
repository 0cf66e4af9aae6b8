package httpapi

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultListen is the HTTP listener's default address.
const DefaultListen = "127.0.0.1:5691"

//go:embed static
var static embed.FS

// Config configures the listener.
type Config struct {
	// Gatherer is what /metrics serves.
	Gatherer prometheus.Gatherer
	Backend  Backend
	// Mount, when set, adds other HTTP APIs to the listener (the
	// time-series ingest paths, package ingest).
	Mount func(*http.ServeMux)
	// Pprof serves net/http/pprof's profiles under /debug/pprof/ (off by
	// default: a profile costs CPU and shows the process's internals).
	Pprof  bool
	Logger *slog.Logger
}

// Server serves /metrics, /api/ and the dashboard.
type Server struct {
	cfg Config
	hs  *http.Server
}

// requestTimeout bounds each API call (a storage check lists the object
// store; everything else reads memory).
const requestTimeout = 30 * time.Second

// New returns a server; Serve runs it.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	b := cfg.Backend
	mux.HandleFunc("GET /api/overview", get(func(ctx context.Context, _ *http.Request) (any, error) { return b.Overview(ctx) }))
	mux.HandleFunc("GET /api/relations", get(func(ctx context.Context, _ *http.Request) (any, error) { return b.Relations(ctx) }))
	mux.HandleFunc("GET /api/graph", get(func(ctx context.Context, r *http.Request) (any, error) {
		id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
		if err != nil {
			return nil, badRequest("id must be a relation id")
		}
		return b.Graph(ctx, id)
	}))
	mux.HandleFunc("GET /api/actors", get(func(ctx context.Context, _ *http.Request) (any, error) { return b.Actors(ctx) }))
	mux.HandleFunc("GET /api/barriers", get(func(ctx context.Context, _ *http.Request) (any, error) { return b.Barriers(ctx) }))
	mux.HandleFunc("GET /api/storage", get(func(ctx context.Context, r *http.Request) (any, error) {
		return b.Storage(ctx, r.URL.Query().Get("check") != "")
	}))
	mux.HandleFunc("GET /api/recoveries", get(func(ctx context.Context, _ *http.Request) (any, error) { return b.Recoveries(ctx) }))
	mux.HandleFunc("GET /api/sessions", get(func(ctx context.Context, _ *http.Request) (any, error) { return b.Sessions(ctx) }))
	mux.HandleFunc("POST /api/sessions/cancel", get(func(ctx context.Context, r *http.Request) (any, error) {
		if r.Header.Get("X-Runnel-Request") == "" {
			// A cross-site form cannot set it (doc.go).
			return nil, &apiError{status: http.StatusForbidden, msg: "the X-Runnel-Request header is required"}
		}
		pid, err := strconv.ParseUint(r.URL.Query().Get("pid"), 10, 32)
		if err != nil {
			return nil, badRequest("pid must be a process id")
		}
		ok, err := b.Cancel(ctx, uint32(pid))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &apiError{status: http.StatusNotFound, msg: "no session with pid " + strconv.FormatUint(pid, 10)}
		}
		return map[string]bool{"cancelled": true}, nil
	}))
	mux.HandleFunc("GET /api/connectors", get(func(ctx context.Context, _ *http.Request) (any, error) { return b.Connectors(ctx) }))
	if cfg.Mount != nil {
		cfg.Mount(mux)
	}
	if cfg.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	sub, _ := fs.Sub(static, "static")
	mux.Handle("GET /", http.FileServerFS(sub))
	s.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Serve serves on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	err := s.hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the listener and waits (a little) for requests in flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.hs.Shutdown(ctx); err != nil {
		return s.hs.Close()
	}
	return nil
}

// apiError is an error with an HTTP status.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(msg string) error { return &apiError{status: http.StatusBadRequest, msg: msg} }

// NotFound is returned by a Backend for an unknown object.
func NotFound(msg string) error { return &apiError{status: http.StatusNotFound, msg: msg} }

// get wraps an API function: a bounded context, JSON out, errors as
// {"error": "..."} with their status. A panic in fn is net/http's to
// catch (it ends the request, never the process).
func get(fn func(ctx context.Context, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		v, err := fn(ctx, r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			status := http.StatusInternalServerError
			var ae *apiError
			if errors.As(err, &ae) {
				status = ae.status
			}
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(v)
	}
}
