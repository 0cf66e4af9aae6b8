#!/usr/bin/env bash
# Runs Runnel's default test suite: installs what the tests need (PostgreSQL
# for differential tests, an S3-compatible server), then gofmt and vet, the Go tests
# (which include the .slt files under tests/ run against a real server) and
# a short fuzz run of the wire-protocol message loop.
#
# Longer campaigns have their own commands; see docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
export PATH="$PATH:$(go env GOPATH)/bin"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
	echo "not gofmt-formatted (run gofmt -w):" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test"
go test -count=1 -timeout 25m ./...

echo "== fuzz: pgwire message loop (20s)"
go test -run '^$' -fuzz '^FuzzMessageLoop$' -fuzztime 20s ./internal/pgwire
