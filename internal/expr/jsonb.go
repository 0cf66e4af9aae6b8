package expr

// jsonKindOf returns the jsonb_typeof name of a canonical jsonb text.
func jsonKindOf(s string) string {
	if s == "" {
		return "null"
	}
	switch s[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}
