package clienttest

import (
	"testing"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func testNodePostgres(t *testing.T, srv *servertest.Server) { t.Skip("todo") }
func testPostgresJS(t *testing.T, srv *servertest.Server)   { t.Skip("todo") }
