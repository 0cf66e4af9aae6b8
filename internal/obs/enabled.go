//go:build !nometrics

package obs

// Enabled is false in a binary built with -tags nometrics: every recording
// function of this package and the actors' row and state-time counters
// (package stream) compile to nothing. It exists to measure what the
// metrics cost (docs/benchmarks.md, "Metrics overhead";
// scripts/metrics-overhead.sh); production binaries record.
const Enabled = true
