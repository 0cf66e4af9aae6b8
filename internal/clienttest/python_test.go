package clienttest

import (
	"os/exec"
	"testing"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// testPython runs testdata/python/matrix.py: psycopg2 (bound parameters
// of every type, COPY through copy_expert, execute_values, transactions,
// 23505), SQLAlchemy (inspect: get_columns, get_pk_constraint; Table
// autoload_with; a transaction) and pandas (read_sql_table,
// read_sql_query, to_sql).
func testPython(t *testing.T, srv *servertest.Server) {
	const py = "/usr/bin/python3"
	need(t, py, have(py))
	need(t, "psycopg2, sqlalchemy and pandas for "+py, exec.Command(py, "-c", "import psycopg2, sqlalchemy, pandas").Run() == nil)
	runClient(t, srv, "testdata/python", py, "matrix.py")
}
