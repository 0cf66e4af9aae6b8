package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runneldb/runnel/internal/storage"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// chromiumPath finds Debian's chromium (scripts/install-deps.sh installs
// it): CI fails without it, elsewhere the test is skipped.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not installed: run scripts/install-deps.sh")
	}
	t.Skip("chromium not installed (scripts/install-deps.sh installs it)")
	return ""
}

// artifactsDir is where screenshots go: RUNNEL_TEST_ARTIFACTS when set
// (docs/operations.md shows them), else the test's temporary directory.
func artifactsDir(t *testing.T) string {
	if d := os.Getenv("RUNNEL_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestDashboardInBrowser loads every dashboard page in headless Chromium,
// checks what it shows against what SQL (and the server) report, cancels
// a running statement with the sessions page's button, and saves a
// screenshot of each page.
func TestDashboardInBrowser(t *testing.T) {
	chrome := chromiumPath(t)
	srv, base := startServer(t)
	conn := srv.Connect(t)
	workload(t, conn)
	sqlInt := func(q string) int {
		t.Helper()
		v, err := strconv.Atoi(servertest.QueryStrings(t, conn, q)[0])
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()

	shots := artifactsDir(t)
	// load opens page (a hash route), waits for its first render and
	// returns what extract (a JavaScript expression) evaluates to, as JSON.
	load := func(page, wantPage, extract string, out any) {
		t.Helper()
		fail := func(err error) {
			t.Helper()
			body, _ := chromedp.Run(bctx, chromedp.Text("#main"))
			t.Fatalf("page %s: %v (shows %q)", page, err, body)
		}
		if err := chromedp.Do(bctx,
			chromedp.Navigate(base+"/#"+page),
			chromedp.WaitVisible(fmt.Sprintf(`#main[data-page=%q][data-loaded="true"]`, wantPage)),
		); err != nil {
			fail(err)
		}
		raw, err := chromedp.Run(bctx, chromedp.Evaluate[json.RawMessage](extract))
		if err != nil {
			fail(err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			fail(fmt.Errorf("decode %s: %w", raw, err))
		}
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			fail(err)
		}
		name := filepath.Join(shots, "dashboard-"+wantPage+".png")
		if err := os.WriteFile(name, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", name)
	}
	cells := func(table, col string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('#%s tbody tr')].map(r => { const c = r.querySelector('[data-col=%q]'); return c ? c.textContent : '' })`, table, col)
	}

	// Overview: the counters SQL can see.
	var ov map[string]string
	load("overview", "overview", `Object.fromEntries([...document.querySelectorAll('.card')].map(c => [c.dataset.key, c.querySelector('.value').textContent]))`, &ov)
	if got, want := ov["actors"], strconv.Itoa(sqlInt("SELECT count(*) FROM rw_catalog.rw_actors")); got != want {
		t.Errorf("overview actors = %s; SQL rw_actors has %s", got, want)
	}

	// Relations: rows as count(*) reports them.
	var rel struct{ Names, Rows, Kinds []string }
	load("relations", "relations", fmt.Sprintf(`({Names: %s, Rows: %s, Kinds: %s})`, cells("relations", "name"), cells("relations", "rows"), cells("relations", "kind")), &rel)
	rowsOf := map[string]string{}
	for i, n := range rel.Names {
		rowsOf[n] = strings.ReplaceAll(rel.Rows[i], ",", "")
	}
	for _, r := range []string{"t", "mv"} {
		if got, want := rowsOf[r], strconv.Itoa(sqlInt("SELECT count(*) FROM "+r)); got != want {
			t.Errorf("relations page: %s has %q rows; SELECT count(*) says %s", r, got, want)
		}
	}

	// The view's stream graph: EXPLAIN's fragments, rows flowing out of
	// the one writing the view.
	id := servertest.QueryStrings(t, conn, "SELECT id FROM rw_catalog.rw_materialized_views WHERE name = 'mv'")[0]
	var frags []struct {
		ID      string `json:"id"`
		RowsOut string `json:"rows"`
		Actors  string `json:"actors"`
	}
	load("graph/"+id, "graph", `[...document.querySelectorAll('.frag')].map(f => ({id: f.dataset.fragment, rows: f.dataset.rowsOut, actors: f.dataset.actors}))`, &frags)
	explain := 0
	for _, line := range servertest.QueryStrings(t, conn, "EXPLAIN CREATE MATERIALIZED VIEW mv2 AS SELECT v, count(*) AS n FROM t GROUP BY v") {
		if strings.HasPrefix(line, "Fragment ") {
			explain++
		}
	}
	if len(frags) != explain || explain < 2 {
		t.Errorf("graph page shows %d fragments; EXPLAIN prints %d", len(frags), explain)
	}
	for _, f := range frags {
		if n, _ := strconv.Atoi(f.RowsOut); n == 0 {
			t.Errorf("graph page: fragment %s emitted no rows (actors %s)", f.ID, f.Actors)
		}
	}

	// Actors: one row per rw_actors row.
	var actorStates []string
	load("actors", "actors", cells("actors", "state"), &actorStates)
	if got, want := len(actorStates), sqlInt("SELECT count(*) FROM rw_catalog.rw_actors"); got != want {
		t.Errorf("actors page lists %d actors; rw_actors has %d", got, want)
	}
	// Each actor's await tree (issue 17 item 4): every running actor is
	// somewhere in its executors' calls.
	var waits []string
	load("actors", "actors", cells("actors", "waiting_on"), &waits)
	for _, w := range waits {
		if !strings.Contains(w, "exec.(*") {
			t.Errorf("actors page: await tree %q names no executor", w)
		}
	}

	// Barriers: the chart has points.
	var points string
	load("barriers", "barriers", `document.getElementById('barrier-chart').dataset.count`, &points)
	if n, _ := strconv.Atoi(points); n < 2 {
		t.Errorf("barrier chart has %s points", points)
	}

	// Storage: the levels as the engine reports them, and a storage check
	// run from the page's button.
	var ssts []string
	load("storage", "storage", `[...document.querySelectorAll('#levels tbody tr')].map(r => r.dataset.ssts)`, &ssts)
	if len(ssts) != storage.NumLevels+1 { // L0..L6 and the time-window level
		t.Errorf("storage page lists %d levels; want %d", len(ssts), storage.NumLevels+1)
	}
	if err := chromedp.Do(bctx, chromedp.Click("#run-check"), chromedp.WaitVisible("#check")); err != nil {
		t.Fatalf("storage check button: %v", err)
	}
	check, err := chromedp.Run(bctx, chromedp.Text("#check"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(check, "objects: ") {
		t.Errorf("storage check shows %q", check)
	}
	if shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err == nil {
		os.WriteFile(filepath.Join(shots, "dashboard-storage-check.png"), shot, 0o644)
	}

	// Recoveries: rw_recovery_history's rows, the RECOVER among them.
	var reasons []string
	load("recoveries", "recoveries", cells("recoveries", "reason"), &reasons)
	if got, want := len(reasons), sqlInt("SELECT count(*) FROM rw_catalog.rw_recovery_history"); got != want || !strings.Contains(strings.Join(reasons, "|"), "RECOVER statement") {
		t.Errorf("recoveries page: %q; rw_recovery_history has %d rows, one a RECOVER", reasons, want)
	}

	// Sources and sinks: the sink's delivered rows as rw_sinks says.
	var sinks struct{ Names, Delivered []string }
	load("connectors", "connectors", fmt.Sprintf(`({Names: %s, Delivered: %s})`, cells("sinks", "name"), cells("sinks", "delivered_rows")), &sinks)
	if len(sinks.Names) != 1 || sinks.Names[0] != "sk" {
		t.Errorf("sinks on the page: %q; want sk", sinks.Names)
	}

	// Sessions: a running statement shows as active, and its Cancel
	// button cancels it (57014, as a client's cancel request would).
	sleeper := srv.Connect(t)
	done := make(chan error, 1)
	go func() {
		_, err := sleeper.Exec(context.Background(), "SELECT pg_sleep(60)")
		done <- err
	}()
	var pid string
	deadline := time.Now().Add(20 * time.Second)
	for pid == "" {
		var active []string
		load("sessions", "sessions", `[...document.querySelectorAll('#sessions tbody tr[data-state="active"]')].filter(r => r.textContent.includes('pg_sleep') && r.textContent.includes('root')).map(r => r.dataset.pid)`, &active)
		if len(active) > 0 {
			pid = active[0]
		} else if time.Now().After(deadline) {
			t.Fatal("the sessions page never showed the pg_sleep statement running")
		}
	}
	if err := chromedp.Do(bctx, chromedp.Click(fmt.Sprintf(`button[data-cancel=%q]`, pid))); err != nil {
		t.Fatalf("cancel button: %v", err)
	}
	select {
	case err := <-done:
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" {
			t.Fatalf("the cancelled statement returned %v; want 57014", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the Cancel button did not cancel the running statement")
	}
}
