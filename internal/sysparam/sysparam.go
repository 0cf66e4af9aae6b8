// Package sysparam defines the system parameters: cluster-wide settings
// changed with ALTER SYSTEM (the frontend validates them with Check), stored
// by the meta node in the catalog, and read by the roles they configure.
package sysparam

import (
	"strings"

	"github.com/runneldb/runnel/internal/sqlerr"
)

// Param is a system parameter. System parameters are cluster-wide settings (ALTER SYSTEM SET / RESET,
// superuser only), stored in the catalog so that they survive restarts,
// and shown by SHOW name and SHOW PARAMETERS.
type Param struct {
	Default     string
	Description string
	Check       func(string) (string, error) // canonical value or error
	// Applied says when a change takes effect, for the notice.
	Applied string
}

// Params are the known parameters, by name.
var Params = map[string]Param{
	"streaming_strict_consistency": {
		Default:     "true",
		Description: "whether streaming executors fail on input that contradicts their state (true) or log it and carry on (false)",
		Check:       boolParam("streaming_strict_consistency"),
		Applied: "it applies to materialized views created from now on and to running ones at their next recovery " +
			"(RECOVER applies it to all now)",
	},
}

func boolParam(name string) func(string) (string, error) {
	return func(v string) (string, error) {
		switch strings.ToLower(v) {
		case "on", "true", "1", "yes":
			return "true", nil
		case "off", "false", "0", "no":
			return "false", nil
		}
		return "", sqlerr.Errorf(sqlerr.InvalidParameterValue, "parameter %q requires a Boolean value", name)
	}
}
