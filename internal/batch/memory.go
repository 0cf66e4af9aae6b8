package batch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/runneldb/runnel/internal/sqlerr"
	"github.com/runneldb/runnel/internal/types"
)

// Memory accounting (I9: no input can end the process). A batch query
// that keeps its input — a sort, a hash aggregate's groups, a DISTINCT's
// seen set, a hash join's build side, a window's rows, a recursive CTE's
// result, an array_agg's elements — once grew the heap until the kernel
// killed the server (SELECT array_agg(x) FROM generate_series(1, 3e8) x).
// Each such operator now charges the approximate bytes it keeps to its
// statement's account before keeping them:
//
//   - the statement's own limit (the session's query_memory_limit; 0
//     means none), and
//   - the process-wide pool shared by every running statement
//     (SetProcessMemoryLimit; --batch-memory-mb), so that many sessions
//     each under their own limit cannot add up to an out-of-memory kill.
//
// Past either, the statement fails with 53200 (out_of_memory) naming the
// limit and the operator; the memory it held is given back when its
// executor tree is closed. The figures are estimates of what the Go heap
// holds (a row is its datums plus their string and decimal payloads; a
// hash table entry adds its key and map overhead), not exact: the limit
// protects the process, it is not a billing meter. Nothing spills.

// MemoryPool is the process-wide budget of batch execution.
type MemoryPool struct {
	limit atomic.Int64 // bytes; 0: unlimited
	used  atomic.Int64
}

// processPool is the pool every statement draws from.
var processPool = newProcessPool()

func newProcessPool() *MemoryPool {
	p := &MemoryPool{}
	p.limit.Store(DefaultProcessMemoryLimit())
	return p
}

// SetProcessMemoryLimit sets the process-wide cap on the memory all
// running batch statements hold together (0: no cap).
func SetProcessMemoryLimit(n int64) { processPool.limit.Store(n) }

// ProcessMemoryLimit is the process-wide cap (0: none).
func ProcessMemoryLimit() int64 { return processPool.limit.Load() }

// ProcessMemoryInUse is what running statements hold from the pool now.
func ProcessMemoryInUse() int64 { return processPool.used.Load() }

// physicalMemory is the memory this process may use: the cgroup's limit
// when there is one, else the machine's (0 when unknown).
func physicalMemory() int64 {
	var total int64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				total = kb << 10
			}
		}
	}
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(path); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
				total = n
			}
		}
	}
	return total
}

// fallbackMemory is assumed when the machine's memory cannot be read.
const fallbackMemory = 8 << 30

// DefaultProcessMemoryLimit is a quarter of the memory: the figures are
// estimates of live data, and Go's collector lets the heap reach about
// twice the live data before it collects (GOGC=100), with the streaming
// engine, caches and write buffers beside it.
func DefaultProcessMemoryLimit() int64 {
	m := physicalMemory()
	if m <= 0 {
		m = fallbackMemory
	}
	return m / 4
}

// DefaultQueryMemoryLimit is the default of the session setting
// query_memory_limit: an eighth of the memory (half the process cap), so
// one statement cannot take all of it from the others.
func DefaultQueryMemoryLimit() int64 { return DefaultProcessMemoryLimit() / 2 }

// poolGrain is how much an account takes from the pool at a time, so that
// the shared counter is touched once per MiB, not once per row.
const poolGrain = 1 << 20

// memAccount is one statement's memory: what its operators hold now.
// It is used by the goroutine running the statement only.
type memAccount struct {
	limit    int64 // the statement's limit in bytes; 0: none
	used     int64
	reserved int64 // taken from pool, a multiple of poolGrain >= used
	pool     *MemoryPool
}

func newMemAccount(limit int64) *memAccount {
	return &memAccount{limit: limit, pool: processPool}
}

// grow charges n bytes for op, or fails with 53200 when the statement's
// limit or the process-wide cap would be passed (nothing is charged then).
func (a *memAccount) grow(op string, n int64) error {
	if a == nil || n <= 0 {
		return nil
	}
	if a.limit > 0 && a.used+n > a.limit {
		return sqlerr.Errorf(sqlerr.OutOfMemory, "out of memory: %s exceeded query_memory_limit (%s): the statement holds about %s",
			op, FormatMemory(a.limit), approxMemory(a.used+n)).
			WithHint("Raise query_memory_limit (SET query_memory_limit = '...'), or make the query keep fewer rows in memory.")
	}
	if a.used+n > a.reserved {
		need := (a.used + n - a.reserved + poolGrain - 1) / poolGrain * poolGrain
		lim := a.pool.limit.Load()
		if now := a.pool.used.Add(need); lim > 0 && now > lim {
			a.pool.used.Add(-need)
			return sqlerr.Errorf(sqlerr.OutOfMemory, "out of memory: %s needs more memory than the server's batch memory limit (%s) has left: running statements hold about %s",
				op, FormatMemory(lim), approxMemory(now-need)).
				WithHint("Run fewer memory-hungry queries at once, or raise the limit (runnel serve --batch-memory-mb).")
		}
		a.reserved += need
	}
	a.used += n
	return nil
}

// shrink gives back n bytes charged earlier.
func (a *memAccount) shrink(n int64) {
	if a == nil || n <= 0 {
		return
	}
	a.used -= n
	if a.used < 0 {
		a.used = 0
	}
	if extra := (a.reserved - a.used) / poolGrain * poolGrain; extra > 2*poolGrain {
		a.pool.used.Add(-extra)
		a.reserved -= extra
	}
}

// close gives everything back to the pool.
func (a *memAccount) close() {
	if a == nil {
		return
	}
	a.pool.used.Add(-a.reserved)
	a.used, a.reserved = 0, 0
}

// memHold is what one executor charged, given back when it closes (an
// executor of a correlated subquery is built and closed once per outer
// row).
type memHold struct {
	a *memAccount
	n int64
}

func (h *memHold) grow(op string, n int64) error {
	if err := h.a.grow(op, n); err != nil {
		return err
	}
	h.n += n
	return nil
}

func (h *memHold) release() {
	h.a.shrink(h.n)
	h.n = 0
}

// Sizes of what the heap holds, roughly.
const (
	datumSize = int64(unsafe.Sizeof(types.Datum{}))
	// sliceSize is a slice header; a row is one plus its datums.
	sliceSize = int64(unsafe.Sizeof([]types.Datum(nil)))
	// mapEntrySize is a Go map entry's overhead beyond its key's bytes
	// (string header, value, bucket share and load-factor slack).
	mapEntrySize = 64
	// keyedRowSize is a sort buffer entry (key slice, row slice, seq).
	keyedRowSize = int64(unsafe.Sizeof(keyedRow{}))
)

// datumBytes is what d holds: its struct and its payload.
func datumBytes(d types.Datum) int64 {
	n := datumSize + int64(len(d.Str()))
	if d.Kind() == types.KindNumeric && d.Decimal() != nil {
		n += 64 + int64(len(d.Decimal().Coeff.Bits()))*8
	}
	return n
}

// rowBytes is what a row holds.
func rowBytes(r []types.Datum) int64 {
	n := sliceSize
	for _, d := range r {
		n += datumBytes(d)
	}
	return n
}

// FormatMemory prints bytes as PostgreSQL prints a memory setting: in the
// largest unit (kB, MB, GB, TB) that divides it exactly.
func FormatMemory(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"kB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	if n%1024 == 0 {
		return fmt.Sprintf("%dkB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

// approxMemory prints an estimate in MB.
func approxMemory(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// ParseMemory parses a memory setting as PostgreSQL does: a number with
// an optional unit (B, kB, MB, GB, TB; none means kB).
func ParseMemory(v string) (int64, bool) {
	v = strings.TrimSpace(v)
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	unit := map[string]int64{"": 1 << 10, "B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
	u, ok := unit[strings.TrimSpace(v[i:])]
	if !ok || n > (1<<62)/u {
		return 0, false
	}
	return n * u, true
}
