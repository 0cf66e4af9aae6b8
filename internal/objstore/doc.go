// Package objstore is the object-store seam under Runnel's LSM: a small
// interface (put, get, ranged get, stat, list, delete) with a local-directory
// backend (the default), an S3-compatible backend, an in-memory backend for
// tests, and a fault-injecting wrapper.
//
// Contract every backend keeps:
//   - Put is atomic: a reader sees the whole object or nothing (local: temp
//     file + fsync + rename; S3: single PUT).
//   - Objects are immutable once written; Runnel never overwrites a key
//     (object ids are never reused, invariant I1).
//   - A missing object is reported as an error that errors.Is(err,
//     ErrNotFound); every error names the key it concerns.
//   - Keys obey ValidateKey, and no key may be another key's "directory"
//     ("a/b" and "a/b/c" cannot both exist): file-backed stores (Local,
//     versitygw's posix backend) map keys to paths. Mem does not enforce
//     this; Runnel's keys (kind/id.ext) never collide that way.
//
// Backends and tools:
//   - Local (local.go): one file per object under a root directory; Put is
//     temp file + fsync + rename + directory fsync, so a crash leaves the
//     old object or the whole new one, never a torn one (I7). Leftover temp
//     files (".tmp-*") are invisible and removed by RemoveTempFiles.
//   - S3 (s3.go): minio-go against any S3-compatible server; "no such key"
//     maps to ErrNotFound, a missing bucket does not.
//   - Mem (mem.go): in memory, for tests.
//   - Open (open.go): picks a backend from a URL ("", path, file://, s3://).
//   - Fault (fault.go): wraps any Store for deterministic simulation:
//     scripted or seeded-random errors per op and key pattern, latency
//     through an injectable sleeper, ambiguous puts (the object lands, the
//     caller hears an error: what I1/I2 code must survive), a crash switch,
//     a per-call hook for pausing at a named point, and a call log.
//
// Every backend passes the same conformance suite (conformance_test.go);
// the S3 run uses a real versitygw from internal/testutil/s3test.
//
// This package knows nothing of SSTs, versions or metadata.
package objstore
