package mysqlwire_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// syncBuffer collects the server's log (written from many goroutines).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs a server with the MySQL listener on a free loopback port and
// returns its MySQL address and the server's log.
func start(t *testing.T) (*servertest.Server, string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	srv := servertest.Start(t,
		servertest.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		servertest.WithConfig(func(c *server.Config) { c.MySQLListen = "127.0.0.1:0" }))
	addr := srv.Server.MySQLAddr()
	if addr == "" {
		t.Fatal("MySQL listener not started")
	}
	return srv, addr, logs
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db interface {
	Exec(string, ...any) (sql.Result, error)
}, q string, args ...any) sql.Result {
	t.Helper()
	res, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}

// wantMySQLError checks the error number and SQLSTATE the driver decoded
// from the ERR packet.
func wantMySQLError(t *testing.T, err error, number uint16, state string) {
	t.Helper()
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		t.Fatalf("got error %v (%T); want MySQL error %d", err, err, number)
	}
	if me.Number != number || string(me.SQLState[:]) != state {
		t.Fatalf("got error %d (%s) %q; want %d (%s)", me.Number, me.SQLState, me.Message, number, state)
	}
}

// TestGoSQLDriver drives the listener with github.com/go-sql-driver/mysql:
// DDL with MySQL quoting, prepared statements with typed parameters and the
// binary row format, the text protocol (interpolateParams), column types
// decoded into Go types, affected-row counts, transactions, USE and MySQL
// error numbers with their SQLSTATEs.
func TestGoSQLDriver(t *testing.T) {
	_, addr, logs := start(t)
	for _, interpolate := range []bool{false, true} {
		t.Run(fmt.Sprintf("interpolateParams=%v", interpolate), func(t *testing.T) {
			db := openDB(t, fmt.Sprintf("root@tcp(%s)/public?parseTime=true&interpolateParams=%v", addr, interpolate))
			tbl := fmt.Sprintf("m_%v", interpolate)
			mustExec(t, db, "CREATE TABLE `"+tbl+"` (id bigint PRIMARY KEY, name text, at timestamp, ok boolean, score double precision, price numeric(10,2), small smallint, raw bytea)")
			at := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
			// Interpolated, a Go bool becomes the integer 1 or 0, which
			// the engine (PostgreSQL's rules) does not assign to a
			// boolean column; a prepared statement binds it as boolean.
			var yes, no any = true, false
			if interpolate {
				yes, no = "true", "false"
			}
			res := mustExec(t, db, "INSERT INTO `"+tbl+"` VALUES (?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?)",
				int64(1), "it's \"quoted\"", at, yes, 1.5, "12.34", 7, []byte{0, 1, 2},
				int64(2), nil, nil, no, nil, nil, nil, nil)
			if n, err := res.RowsAffected(); err != nil || n != 2 {
				t.Fatalf("RowsAffected = %d, %v; want 2", n, err)
			}
			mustExec(t, db, "FLUSH")
			rows, err := db.Query("SELECT id, name, at, ok, score, price, small, raw FROM `"+tbl+"` WHERE id >= ? ORDER BY id", 1)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rows.Next() {
				var (
					id    int64
					name  sql.NullString
					ts    sql.NullTime
					ok    bool
					score sql.NullFloat64
					price sql.NullString
					small sql.NullInt16
					raw   []byte
				)
				if err := rows.Scan(&id, &name, &ts, &ok, &score, &price, &small, &raw); err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%d|%v|%v|%v|%v|%v|%v|%x", id, name, ts, ok, score, price, small, raw))
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
			want := []string{
				fmt.Sprintf("1|{it's \"quoted\" true}|{%v true}|true|{1.5 true}|{12.34 true}|{7 true}|000102", at),
				"2|{ false}|{0001-01-01 00:00:00 +0000 UTC false}|false|{0 false}|{ false}|{0 false}|",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			res = mustExec(t, db, "UPDATE `"+tbl+"` SET name = ? WHERE id = ?", "renamed", 2)
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("UPDATE RowsAffected = %d; want 1", n)
			}

			// A transaction: the rollback undoes the insert.
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, tx, "INSERT INTO `"+tbl+"` (id) VALUES (?)", 3)
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.QueryRow("SELECT count(*) FROM `" + tbl + "`").Scan(&n); err != nil || n != 2 {
				t.Fatalf("count after rollback = %d, %v; want 2", n, err)
			}

			_, err = db.Exec("INSERT INTO `"+tbl+"` (id) VALUES (?)", 1)
			wantMySQLError(t, err, 1062, "23000")
			_, err = db.Query("SELECT * FROM no_such_table WHERE id = ?", 1)
			wantMySQLError(t, err, 1146, "42S02")
			_, err = db.Exec("SELEC 1")
			wantMySQLError(t, err, 1064, "42000")
			err = db.QueryRow("SELECT 1/0").Scan(&n)
			wantMySQLError(t, err, 1365, "22012")
		})
	}

	// USE and the current database; SHOW DATABASES and SHOW TABLES.
	db := openDB(t, fmt.Sprintf("root@tcp(%s)/", addr))
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CREATE SCHEMA metrics"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "USE metrics"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "CREATE TABLE cpu (host text, v int)"); err != nil {
		t.Fatal(err)
	}
	var cur string
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&cur); err != nil || cur != "metrics" {
		t.Fatalf("DATABASE() = %q, %v; want metrics", cur, err)
	}
	if got := queryStrings(t, conn, "SHOW TABLES"); strings.Join(got, ",") != "cpu" {
		t.Fatalf("SHOW TABLES = %v; want [cpu]", got)
	}
	if got := queryStrings(t, conn, "SHOW DATABASES LIKE 'metr%'"); strings.Join(got, ",") != "metrics" {
		t.Fatalf("SHOW DATABASES LIKE = %v; want [metrics]", got)
	}
	_, err = conn.ExecContext(ctx, "USE nosuch")
	wantMySQLError(t, err, 1049, "42000")

	// An unknown user is refused with 1045.
	bad := openDB(t, fmt.Sprintf("nobody@tcp(%s)/", addr))
	wantMySQLError(t, bad.Ping(), 1045, "28000")

	if strings.Contains(logs.String(), "panic") {
		t.Fatalf("server log has a panic:\n%s", logs.String())
	}
}

func queryStrings(t *testing.T, conn *sql.Conn, q string) []string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestPasswordUser: a user with a password logs in with
// mysql_clear_password (checked against its SCRAM verifier) from loopback;
// a wrong password is refused with 1045.
func TestPasswordUser(t *testing.T) {
	srv, addr, _ := start(t)
	pg := servertest.Connect(t, srv.URL())
	servertest.Exec(t, pg, "CREATE USER alice WITH PASSWORD 's3cret'")
	db := openDB(t, fmt.Sprintf("alice:s3cret@tcp(%s)/?allowCleartextPasswords=true", addr))
	var u string
	if err := db.QueryRow("SELECT CURRENT_USER()").Scan(&u); err != nil || u != "alice@%" {
		t.Fatalf("CURRENT_USER() = %q, %v; want alice@%%", u, err)
	}
	wrong := openDB(t, fmt.Sprintf("alice:nope@tcp(%s)/?allowCleartextPasswords=true", addr))
	wantMySQLError(t, wrong.Ping(), 1045, "28000")
}

// TestMySQLCLI runs the mysql command-line client (Debian's
// mariadb-client, installed by scripts/install-deps.sh) against the
// listener: its connect-time query, SHOW and DESCRIBE, USE, MySQL quoting,
// and an error as the client prints it.
func TestMySQLCLI(t *testing.T) {
	bin, err := exec.LookPath("mysql")
	if err != nil {
		t.Skip("mysql client not installed (scripts/install-deps.sh installs mariadb-client)")
	}
	_, addr, _ := start(t)
	host, port, _ := net.SplitHostPort(addr)
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-h", host, "-P", port, "-u", "root"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Interactive-style session (the client sends SELECT @@version_comment
	// at connect) with tabular output.
	out, err := run("-t", "-e", "CREATE TABLE `odd name` (id int PRIMARY KEY, v text, ts timestamp); "+
		`INSERT INTO `+"`odd name`"+` VALUES (1, "double \"quoted\"", '2024-01-02 03:04:05'), (2, 'back\\slash', NULL); FLUSH; `+
		"SELECT * FROM `odd name` ORDER BY id; SHOW TABLES; DESCRIBE `odd name`; SELECT @@version_comment, DATABASE()")
	if err != nil {
		t.Fatalf("mysql: %v\n%s", err, out)
	}
	want := `+------+-----------------+---------------------+
| id   | v               | ts                  |
+------+-----------------+---------------------+
|    1 | double "quoted" | 2024-01-02 03:04:05 |
|    2 | back\slash      | NULL                |
+------+-----------------+---------------------+
+------------------+
| Tables_in_public |
+------------------+
| odd name         |
+------------------+
+-------+-----------------------------+------+------+---------+-------+
| Field | Type                        | Null | Key  | Default | Extra |
+-------+-----------------------------+------+------+---------+-------+
| id    | integer                     | NO   |      | NULL    |       |
| v     | text                        | YES  |      | NULL    |       |
| ts    | timestamp without time zone | YES  |      | NULL    |       |
+-------+-----------------------------+------+------+---------+-------+
+-------------------+------------+
| @@version_comment | DATABASE() |
+-------------------+------------+
| Runnel            | public     |
+-------------------+------------+
`
	if out != want {
		t.Fatalf("mysql output:\n%s\nwant:\n%s", out, want)
	}
	// Batch output: LIMIT a, b, # comments, and the statements MySQL
	// clients send that this package answers.
	out, err = run("-B", "-e", "CREATE TABLE k (id int PRIMARY KEY, v text); INSERT INTO k VALUES (1,'a'),(2,'b'),(3,'c'); FLUSH; "+
		"SELECT id FROM k ORDER BY id LIMIT 1, 2; # a comment\n"+
		"SHOW FULL TABLES LIKE 'k'; SHOW CREATE TABLE k; SHOW VARIABLES LIKE 'version_comment'; SET NAMES utf8mb4; "+
		"SET sql_mode = 'ANSI'; SELECT VERSION(), @@sql_mode; SHOW COLUMNS FROM k")
	if err != nil {
		t.Fatalf("mysql: %v\n%s", err, out)
	}
	want = "id\n2\n3\n" +
		"Tables_in_public\tTable_type\nk\tBASE TABLE\n" +
		"Table\tCreate Table\nk\tCREATE TABLE public.k (id integer, v text, PRIMARY KEY (id))\n" +
		"Variable_name\tValue\nversion_comment\tRunnel\n" +
		"VERSION()\t@@sql_mode\n8.0.36-runnel\tANSI\n" +
		"Field\tType\tNull\tKey\tDefault\tExtra\nid\tinteger\tNO\t\tNULL\t\nv\ttext\tYES\t\tNULL\t\n"
	if out != want {
		t.Fatalf("mysql -B output:\n%s\nwant:\n%s", out, want)
	}
	out, err = run("-e", "SELECT * FROM missing")
	if err == nil || !strings.Contains(out, "ERROR 1146 (42S02)") || !strings.Contains(out, `relation "missing" does not exist`) {
		t.Fatalf("mysql error output = %v\n%s; want ERROR 1146 (42S02)", err, out)
	}
	out, err = run("-D", "nosuch", "-e", "SELECT 1")
	if err == nil || !strings.Contains(out, "ERROR 1049 (42000)") {
		t.Fatalf("mysql -D nosuch = %v\n%s; want ERROR 1049 (42000)", err, out)
	}
}
