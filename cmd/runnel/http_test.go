package main

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// runnel serve --http-listen serves the line-protocol ingest: a write with
// plain HTTP to the subprocess is answered 204 and its rows are in the
// table it created. RUNNEL_MYSQL_LISTEN starts the MySQL listener, which
// reads the same table.
func TestServeHTTPListen(t *testing.T) {
	bin := servertest.BuildBinary(t)
	httpAddr, mysqlAddr := servertest.FreeAddr(t), servertest.FreeAddr(t)
	p := servertest.StartProcess(t, bin, servertest.ProcessOptions{DataDir: t.TempDir(),
		Args: []string{"--barrier-interval", "50ms", "--log-level", "warn", "--http-listen", httpAddr},
		Env:  []string{"RUNNEL_MYSQL_LISTEN=" + mysqlAddr}})
	p.WaitReady(t, 30*time.Second)
	resp, err := http.Post("http://"+httpAddr+"/v1/influxdb/write?precision=s", "text/plain",
		strings.NewReader("cpu,host=a usage=0.5 1700000000\ncpu,host=b usage=0.25 1700000000\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("write: %s", resp.Status)
	}
	conn := servertest.Connect(t, p.URL())
	if got := fmt.Sprint(servertest.QueryStrings(t, conn, "SELECT host, usage FROM cpu ORDER BY host")); got != "[a|0.5 b|0.25]" {
		t.Fatalf("cpu = %s", got)
	}
	db, err := sql.Open("mysql", "root@tcp("+mysqlAddr+")/public")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sum float64
	if err := db.QueryRow("SELECT sum(`usage`) FROM cpu").Scan(&sum); err != nil || sum != 0.75 {
		t.Fatalf("sum(usage) over MySQL = %v, %v; want 0.75", sum, err)
	}
	// The PromQL API is on the same listener.
	resp, err = http.Get("http://" + httpAddr + "/v1/prometheus/api/v1/query?query=sum(cpu)&time=1700000030")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000030,"0.75"]}]}}`; strings.TrimSpace(string(b)) != want {
		t.Fatalf("sum(cpu) = %s, want %s", b, want)
	}
}
