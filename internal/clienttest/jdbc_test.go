package clienttest

import (
	"testing"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// pgjdbcJar is Debian's libpostgresql-jdbc-java.
const pgjdbcJar = "/usr/share/java/postgresql.jar"

// testJDBC compiles testdata/jdbc/Matrix.java with javac and runs it:
// PreparedStatement parameters of every type (setObject with java.time,
// UUID, PGInterval, PGobject jsonb), ResultSetMetaData (table name and
// nullability from the RowDescription), DatabaseMetaData (getTables,
// getColumns, getPrimaryKeys, getIndexInfo, getImportedKeys, getTypeInfo,
// getSchemas), commit and rollback, CopyManager and a batch, 23505.
func testJDBC(t *testing.T, srv *servertest.Server) {
	need(t, "javac", have("javac"))
	need(t, "java", have("java"))
	need(t, "pgjdbc ("+pgjdbcJar+")", have(pgjdbcJar))
	classes := t.TempDir()
	runClient(t, srv, "testdata/jdbc", "javac", "-cp", pgjdbcJar, "-d", classes, "Matrix.java")
	runClient(t, srv, "testdata/jdbc", "java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", pgjdbcJar+":"+classes, "Matrix")
}
