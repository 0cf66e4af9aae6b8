package cluster

import (
	"fmt"
	"strings"
)

// The roles of a node (`runnel serve --role`), in the order they are shown.
const (
	RoleMeta      = "meta"
	RoleCompute   = "compute"
	RoleFrontend  = "frontend"
	RoleCompactor = "compactor"
	// RoleAll is every role in one process (the default).
	RoleAll = "all"
)

var allRoles = []string{RoleMeta, RoleCompute, RoleFrontend, RoleCompactor}

// AllRoles is every role, expanded.
func AllRoles() []string { return append([]string(nil), allRoles...) }

// ParseRoles reads a comma-separated role list ("all", "meta",
// "meta,frontend", …) into the roles it names, expanded ("all" is every
// role), without duplicates, in the order of AllRoles.
func ParseRoles(s string) ([]string, error) {
	want := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		r = strings.ToLower(strings.TrimSpace(r))
		switch r {
		case RoleAll:
			for _, a := range allRoles {
				want[a] = true
			}
		case RoleMeta, RoleCompute, RoleFrontend, RoleCompactor:
			want[r] = true
		case "":
			return nil, fmt.Errorf("role list %q has an empty entry (roles: all, meta, compute, frontend, compactor, comma-separated)", s)
		default:
			return nil, fmt.Errorf("unknown role %q (roles: all, meta, compute, frontend, compactor, comma-separated)", r)
		}
	}
	var out []string
	for _, a := range allRoles {
		if want[a] {
			out = append(out, a)
		}
	}
	return out, nil
}

// IsAll reports whether roles holds every role.
func IsAll(roles []string) bool { return len(roles) == len(allRoles) }
