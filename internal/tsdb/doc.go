// Package tsdb holds what makes a Runnel table a time-series table
// (GreptimeDB's model, issue 18): a time index column, tag columns, an
// append mode and a time to live. It is pure layout and policy — no I/O,
// no protocol: the server calls Layout when it creates such a table and
// registers Retention with the storage engine; the HTTP ingest
// (internal/ingest) maps its protocols onto the same tables.
//
// # Layout
//
// CREATE TABLE cpu (host TEXT, region TEXT, ts TIMESTAMPTZ, usage DOUBLE
// PRECISION, PRIMARY KEY (host, region)) WITH (time_index = 'ts',
// append_mode = 'true', ttl = '7d').
//
//   - The declared PRIMARY KEY names the tags (GreptimeDB's PRIMARY KEY);
//     the other visible columns but the time index are fields.
//   - The stored key is (tags..., ts): one series' rows are contiguous and
//     ordered by time, and a row with the same tags and time replaces the
//     earlier one (GreptimeDB's last-write-wins dedup).
//   - append_mode = 'true' keys rows by (tags..., ts, _row_id) with a
//     generated, unique _row_id: duplicates are kept and an insert reads
//     nothing (no existence check, exec.TableWriter.Append).
//   - The distribution key is the tags (all of a series in one vnode), or
//     the whole key when there are none.
//
// # TTL
//
// ttl = '7d' (units s, m, h, d, w; several may be summed: '1h30m'): a row
// whose time index is older than now − ttl disappears from every read at
// once and from storage at the next compaction that sees it. Because the
// time is in the key, expiry is a property of the key; the storage engine
// does both halves (storage.Retention) — this package only decodes the
// time from a key (TimeOf). Rows are not retracted from materialized views
// that already counted them: TTL is retention, not a delete (as in
// RisingWave's and GreptimeDB's TTL).
//
// # Time windows
//
// time_window = '1h' (GreptimeDB's compaction.twcs.time_window, also
// accepted; default storage.DefaultTimeWindow) is the width of the time
// windows the storage engine partitions the table's SSTs by: compaction
// merges within a window, a time-range scan reads only the overlapping
// windows, and an expired window is dropped whole (storage/window.go).
package tsdb
