package sqlhttp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/server"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

func post(t *testing.T, base string, form url.Values, user, password string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/v1/sql", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// withoutTime drops execution_time_ms, which varies.
func withoutTime(t *testing.T, body string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, body)
	}
	if _, ok := m["execution_time_ms"]; !ok {
		t.Fatalf("answer has no execution_time_ms: %s", body)
	}
	delete(m, "execution_time_ms")
	b, _ := json.Marshal(m)
	return string(b)
}

// TestSQLOverHTTP: POST /v1/sql with a form and GET with the query string
// answer in GreptimeDB's JSON shape — one output per statement, records
// with column schemas and typed values, affectedrows for DML — db picks the
// schema, errors answer 400 with a status code and the SQLSTATE, and a user
// with a password must give it by HTTP Basic authentication.
func TestSQLOverHTTP(t *testing.T) {
	srv := servertest.Start(t, servertest.WithConfig(func(c *server.Config) { c.HTTPListen = "127.0.0.1:0" }))
	base := "http://" + srv.Server.HTTPAddr()

	code, body := post(t, base, url.Values{"sql": {`CREATE TABLE cpu (host text, ts timestamptz, usage double precision, n bigint, ok boolean, j jsonb, d numeric);
		INSERT INTO cpu VALUES ('a', '2023-11-14 22:13:20+00', 0.5, 3, true, '{"k": [1]}', 1.25), ('b', NULL, NULL, NULL, NULL, NULL, NULL);
		FLUSH;
		SELECT * FROM cpu ORDER BY host`}}, "", "")
	if code != http.StatusOK {
		t.Fatalf("POST: %d %s", code, body)
	}
	want := `{"output":[{"affectedrows":0},{"affectedrows":2},{"affectedrows":0},{"records":{"rows":[["a",1700000000000000,0.5,3,true,{"k":[1]},1.25],["b",null,null,null,null,null,null]],` +
		`"schema":{"column_schemas":[{"data_type":"String","name":"host"},{"data_type":"TimestampMicrosecond","name":"ts"},{"data_type":"Float64","name":"usage"},` +
		`{"data_type":"Int64","name":"n"},{"data_type":"Boolean","name":"ok"},{"data_type":"Json","name":"j"},{"data_type":"Decimal128","name":"d"}]},"total_rows":2}}]}`
	if got := withoutTime(t, body); got != want {
		t.Fatalf("POST answer:\n%s\nwant:\n%s", got, want)
	}

	// GET with db naming another schema.
	conn := servertest.Connect(t, srv.URL())
	servertest.Exec(t, conn, "CREATE SCHEMA metrics")
	servertest.Exec(t, conn, "CREATE TABLE metrics.mem (v int)")
	servertest.Exec(t, conn, "INSERT INTO metrics.mem VALUES (7)")
	servertest.Exec(t, conn, "FLUSH")
	resp, err := http.Get(base + "/v1/sql?db=metrics&sql=" + url.QueryEscape("SELECT v FROM mem"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"output":[{"records":{"rows":[[7]],"schema":{"column_schemas":[{"data_type":"Int32","name":"v"}]},"total_rows":1}}]}`; resp.StatusCode != 200 || withoutTime(t, string(b)) != want {
		t.Fatalf("GET: %d %s; want %s", resp.StatusCode, b, want)
	}

	// Errors.
	for _, tc := range []struct{ sql, want string }{
		{"SELECT * FROM nosuch", `{"code":4001,"error":"relation \"nosuch\" does not exist","sqlstate":"42P01"}`},
		{"SELEC 1", `{"code":2000,"error":"syntax error at or near \"SELEC\"","sqlstate":"42601"}`},
		{"", `{"code":2000,"error":"no statement: give it in the sql parameter","sqlstate":"42601"}`},
	} {
		code, body := post(t, base, url.Values{"sql": {tc.sql}}, "", "")
		if code != http.StatusBadRequest || withoutTime(t, body) != tc.want {
			t.Errorf("%q: %d %s; want 400 %s", tc.sql, code, body, tc.want)
		}
	}

	// A user with a password.
	servertest.Exec(t, conn, "CREATE USER alice WITH PASSWORD 's3cret'")
	if code, body := post(t, base, url.Values{"sql": {"SELECT current_user"}}, "alice", "s3cret"); code != 200 || !strings.Contains(body, `"rows":[["alice"]]`) {
		t.Fatalf("alice with her password: %d %s", code, body)
	}
	if code, body := post(t, base, url.Values{"sql": {"SELECT 1"}}, "alice", "wrong"); code != http.StatusUnauthorized || !strings.Contains(body, `"sqlstate":"28P01"`) {
		t.Fatalf("alice with a wrong password: %d %s; want 401 28P01", code, body)
	}
}
