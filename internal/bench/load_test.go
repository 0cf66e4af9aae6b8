package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runneldb/runnel/internal/testutil/pgtest"
)

// TestRunLoadSmall runs the load benchmark end to end through every load
// path on a small data set: RunLoad fails unless both tables hold the same
// rows on Runnel and PostgreSQL after each path's first round.
func TestRunLoadSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, err := RunLoad(ctx, LoadOptions{Rows: 3000, Rounds: 1, Seed: 5, Formats: LoadFormats, PostgresURL: pgtest.NewDatabase(t), Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(res) != len(LoadFormats) {
		t.Fatalf("got %d results; want %d", len(res), len(LoadFormats))
	}
	for _, r := range res {
		if !r.Equal || r.RunnelSeconds <= 0 || r.PostgresSeconds <= 0 || r.Ratio <= 0 {
			t.Errorf("result %+v: want equal tables and positive times", r)
		}
	}
	if !strings.Contains(out.String(), "PostgreSQL's speed") {
		t.Errorf("report lacks the ratio:\n%s", out.String())
	}
}
