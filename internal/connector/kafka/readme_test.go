package kafka_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/runneldb/runnel/internal/testutil/servertest"
)

// TestReadmeKafkaExample runs the README's "Kafka topic → view" example:
// its kcat command (an independent producer, librdkafka) against an
// in-process kfake broker, then its SQL, and compares the last query's
// rows with the README's text block.
func TestReadmeKafkaExample(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (scripts/install-deps.sh installs it)")
	}
	_, file, _, _ := runtime.Caller(0)
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(file), "../../../README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "<!-- kafka-example")
	if i < 0 {
		t.Fatal("README has no kafka-example")
	}
	block := func(lang string) string {
		start := strings.Index(text[i:], "```"+lang+"\n")
		if start < 0 {
			t.Fatalf("README kafka-example: no %s block", lang)
		}
		start += i + len("```"+lang+"\n")
		end := strings.Index(text[start:], "```")
		i = start + end
		return text[start : start+end]
	}
	sh, sql, want := block("sh"), block("sql"), block("text")

	b := startBroker(t, 1, "orders")
	sh = strings.ReplaceAll(sh, "127.0.0.1:9092", b.addr)
	sh = strings.ReplaceAll(sh, "kcat ", kcat+" ")
	if out, err := exec.Command("bash", "-c", sh).CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	srv := servertest.Start(t)
	conn := servertest.Connect(t, srv.URL())
	stmts := strings.Split(strings.ReplaceAll(sql, "127.0.0.1:9092", b.addr), ";\n")
	last := strings.TrimSpace(stmts[len(stmts)-1])
	if last == "" {
		stmts = stmts[:len(stmts)-1]
		last = strings.TrimSpace(stmts[len(stmts)-1])
	}
	for _, st := range stmts[:len(stmts)-1] {
		servertest.Exec(t, conn, st)
	}
	waitRows(t, conn, strings.TrimSuffix(last, ";"), strings.Join(strings.Split(strings.TrimSpace(want), "\n"), ";"))
}
