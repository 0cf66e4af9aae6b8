#!/bin/sh
# Metrics overhead (issue 17 acceptance: Nexmark q0 and q5 with metrics on
# vs off within 3 %). Builds runnel twice — as shipped ("on": every series
# recorded, /metrics scraped every SCRAPE by an HTTP client as Prometheus
# would) and with -tags nometrics ("off": obs.Enabled is false, every
# recording and the actors' row and state-time counters compile to nothing,
# no listener) — and runs each query ROUNDS times per binary, alternating,
# so that load from other work hits both. Prints one JSON line per run and
# a summary per query: the best and median events per CPU-second of each
# side (CPU time, not wall time: on a shared machine wall time mostly
# measures the queue for a core) and off/on - 1 as the overhead.
#
#   EVENTS=300000 ROUNDS=3 QUERIES="q0 q5" SCRAPE=1s scripts/metrics-overhead.sh
set -eu
EVENTS=${EVENTS:-300000}
ROUNDS=${ROUNDS:-3}
QUERIES=${QUERIES:-"q0 q5"}
SCRAPE=${SCRAPE:-1s}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$(dirname "$0")/.."
go build -o "$dir/runnel-on" ./cmd/runnel
go build -tags nometrics -o "$dir/runnel-off" ./cmd/runnel
for q in $QUERIES; do
	i=0
	while [ "$i" -lt "$ROUNDS" ]; do
		for side in on off; do
			if [ $side = on ]; then extra="--scrape-interval $SCRAPE"; else extra=""; fi
			# shellcheck disable=SC2086
			GOMAXPROCS=${GOMAXPROCS:-2} "$dir/runnel-$side" bench nexmark --queries "$q" --events "$EVENTS" --json $extra |
				jq -c --arg side $side '. + {side: $side}' | tee -a "$dir/results.jsonl"
		done
		i=$((i + 1))
	done
done
jq -s -r 'group_by(.query)[] | . as $runs |
	def eps(s): [$runs[] | select(.side == s) | .events_per_cpu_second] | sort;
	def med(a): a[(a | length) / 2 | floor];
	(eps("on")) as $on | (eps("off")) as $off |
	"\($runs[0].query): events per CPU-second, metrics on best \($on[-1] | floor) median \(med($on) | floor); off best \($off[-1] | floor) median \(med($off) | floor); overhead best \((($off[-1] / $on[-1] - 1) * 1000 | round) / 10)%, median \(((med($off) / med($on) - 1) * 1000 | round) / 10)%; scrapes per run at least \([$runs[] | select(.side == "on") | .scrapes // 0] | min)"' "$dir/results.jsonl"
