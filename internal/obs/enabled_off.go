//go:build nometrics

package obs

// Enabled: see enabled.go. This binary was built with -tags nometrics.
const Enabled = false
