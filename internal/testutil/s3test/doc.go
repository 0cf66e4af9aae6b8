// Package s3test runs a real S3-compatible server for tests: versitygw
// (https://github.com/versity/versitygw) with its POSIX backend in a temp
// directory, listening on a free loopback port. scripts/install-deps.sh
// installs the pinned version.
//
// Each Start launches its own server (it starts in well under a second), so
// tests are isolated without sharing state; NewBucket makes a fresh bucket.
// The server is started from a permanently locked OS thread with
// Pdeathsig=SIGKILL, so it dies with the test binary even if the binary is
// killed; t.Cleanup stops it earlier in the normal case.
//
// Missing binary: with CI=true the test fails naming scripts/install-deps.sh;
// elsewhere it is skipped.
package s3test
