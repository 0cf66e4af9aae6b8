package objstore

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidKey is returned (wrapped) for a key no backend may store.
var ErrInvalidKey = errors.New("invalid object key")

// tempPrefix starts the name of the Local backend's in-flight temporary
// files. Keys may not use it for any path component, so a temporary file can
// never be mistaken for an object.
const tempPrefix = ".tmp-"

// ValidateKey checks that key is a relative, slash-separated path that every
// backend stores under the same name: non-empty, no leading or trailing
// slash, no empty, "." or ".." component, no NUL or backslash, and no
// component starting with ".tmp-" (reserved for Local's temporary files).
// The rules keep a key from escaping the Local root directory and keep the
// three backends interchangeable.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if strings.ContainsAny(key, "\x00\\") {
		return fmt.Errorf("%w %q: contains NUL or backslash", ErrInvalidKey, key)
	}
	if strings.HasPrefix(key, "/") {
		return fmt.Errorf("%w %q: absolute", ErrInvalidKey, key)
	}
	for _, c := range strings.Split(key, "/") {
		switch {
		case c == "":
			return fmt.Errorf("%w %q: empty path component", ErrInvalidKey, key)
		case c == "." || c == "..":
			return fmt.Errorf("%w %q: %q component", ErrInvalidKey, key, c)
		case strings.HasPrefix(c, tempPrefix):
			return fmt.Errorf("%w %q: component starts with reserved %q", ErrInvalidKey, key, tempPrefix)
		}
	}
	return nil
}

// validatePrefix checks a List prefix: "" or a valid key prefix. Its last
// component may be partial ("sst/0000"), so it is checked like a key after
// dropping a trailing slash.
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := ValidateKey(strings.TrimSuffix(prefix, "/")); err != nil {
		return fmt.Errorf("list prefix %q: %w", prefix, err)
	}
	return nil
}
