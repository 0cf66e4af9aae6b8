package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Settings given at connection startup (as a startup parameter or in
// options=-c ...) follow SET's aliases and canonical spelling.
func TestStartupSettings(t *testing.T) {
	ts := startTestServer(t, "")
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(ts.url() + "&options=-c%20rw_implicit_flush%3Dtrue")
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["timezone"] = "Europe/Berlin"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if got := queryStrings(t, conn, "SHOW implicit_flush"); fmt.Sprint(got) != "[on]" {
		t.Fatalf("implicit_flush from startup options = %v; want [on]", got)
	}
	if got := queryStrings(t, conn, "SHOW timezone"); fmt.Sprint(got) != "[Europe/Berlin]" {
		t.Fatalf("timezone from a startup parameter = %v", got)
	}
}
