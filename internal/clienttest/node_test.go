package clienttest

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// needNode skips unless node and the npm modules (installed by
// scripts/install-deps.sh with npm ci from package-lock.json) are there.
func needNode(t *testing.T, module string) {
	t.Helper()
	need(t, "node", have("node"))
	need(t, "npm module "+module+" (npm ci in testdata/node)", have(filepath.Join("testdata/node/node_modules", module, "package.json")))
}

// testNodePostgres runs testdata/node/node_postgres.js: bound parameters
// of every type, field metadata, information_schema and pg_index
// reflection, ROLLBACK, a bulk load of multi-row INSERTs in a transaction,
// 23505.
func testNodePostgres(t *testing.T, srv *servertest.Server) {
	needNode(t, "pg")
	runClient(t, srv, "testdata/node", "node", "node_postgres.js")
}

// testPostgresJS runs testdata/node/postgresjs.js: tagged-template
// parameters of every type, column metadata, reflection, sql.begin with a
// commit and an error, COPY FROM STDIN through a writable stream and the
// multi-row insert helper, 23505.
func testPostgresJS(t *testing.T, srv *servertest.Server) {
	needNode(t, "postgres")
	runClient(t, srv, "testdata/node", "node", "postgresjs.js")
}

var _ = exec.LookPath
