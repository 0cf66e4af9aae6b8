package obs

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
)

// EventLog captures a logger's records as JSON, for tests that check the
// structured events (their names and keys are an interface: see
// events.go).
type EventLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// NewEventLog returns a logger writing every record at debug level and
// above into the returned EventLog.
func NewEventLog() (*slog.Logger, *EventLog) {
	l := &EventLog{}
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})), l
}

// Write implements io.Writer for the handler (one record per call).
func (l *EventLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Events returns the records whose event key is name, decoded.
func (l *EventLog) Events(name string) []map[string]any {
	l.mu.Lock()
	text := l.buf.String()
	l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["event"] == name {
			out = append(out, m)
		}
	}
	return out
}
