package clienttest

import (
	"testing"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func testPsql(t *testing.T, srv *servertest.Server)         { t.Skip("todo") }
func testPython(t *testing.T, srv *servertest.Server)       { t.Skip("todo") }
func testJDBC(t *testing.T, srv *servertest.Server)         { t.Skip("todo") }
func testNodePostgres(t *testing.T, srv *servertest.Server) { t.Skip("todo") }
func testPostgresJS(t *testing.T, srv *servertest.Server)   { t.Skip("todo") }
