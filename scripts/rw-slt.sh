#!/usr/bin/env bash
# rw-slt.sh — measure how many sqllogictest files of a local directory (for
# example a copy of RisingWave's e2e_test/) pass whole against Runnel.
#
#   scripts/rw-slt.sh DIR [OUT]
#
# Each *.slt file under DIR (recursively; include directives resolve from the
# file's own directory) runs with `runnel slt` against a fresh server on a
# fresh data directory, as RisingWave's own runner gives each file a clean
# cluster. A file passes when every record in it passes. Per-file results go
# to OUT (default /tmp/rw-slt-results): OUT/summary.txt lists PASS/FAIL per
# file, OUT/<file>.log holds `runnel slt -v` output of a failing file.
#
# Each session starts with rw_implicit_flush on (a startup option in the
# URL): RisingWave's own runner for these files (the simulation test client
# in src/tests/simulation) sets RW_IMPLICIT_FLUSH on every connection, and
# many files read right after an INSERT without a FLUSH of their own.
#
# RUNNEL_BIN picks the binary (default: built from this checkout into OUT).
# Files whose directory the caller does not want (kafka, cdc, sinks, UDF
# servers) are the caller's to leave out of DIR.
set -euo pipefail

dir=${1:?usage: rw-slt.sh DIR [OUT]}
out=${2:-/tmp/rw-slt-results}
mkdir -p "$out"
bin=${RUNNEL_BIN:-}
if [[ -z "$bin" ]]; then
	bin="$out/runnel"
	(cd "$(dirname "$0")/.." && go build -o "$bin" ./cmd/runnel)
fi
# freeport prints a loopback port nothing listens on.
freeport() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

: >"$out/summary.txt"
pass=0
total=0
while IFS= read -r f; do
	rel=${f#"$dir"/}
	data=$(mktemp -d)
	port=$(freeport)
	url="postgres://root@127.0.0.1:$port/dev?sslmode=disable&options=-c%20rw_implicit_flush%3Dtrue"
	"$bin" serve --data-dir "$data" --listen "127.0.0.1:$port" --http-listen "" --log-level error \
		>"$data/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 1 300); do
		if ! kill -0 "$spid" 2>/dev/null; then break; fi
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
		sleep 0.1
	done
	total=$((total + 1))
	log="$out/${rel//\//__}.log"
	if "$bin" slt -v --timeout 60s --url "$url" "$f" >"$log" 2>&1; then
		pass=$((pass + 1))
		echo "PASS $rel" >>"$out/summary.txt"
		rm -f "$log"
	else
		echo "FAIL $rel" >>"$out/summary.txt"
	fi
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	rm -rf "$data"
done < <(find "$dir" -name '*.slt' | sort)
echo "$pass/$total files passed whole" | tee -a "$out/summary.txt"
