package ident

import "testing"

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"abc", "abc"},
		{"a_1$", "a_1$"},
		{"Abc", `"Abc"`},
		{"1a", `"1a"`},
		{"", `""`},
		{`a"b`, `"a""b"`},
		{"select", `"select"`},   // reserved
		{"boolean", `"boolean"`}, // column-name keyword
		{"left", `"left"`},       // type/function-name keyword
		{"name", "name"},         // unreserved keyword
		{"object", "object"},     // unreserved keyword
		{"user_id", "user_id"},
		{"a b", `"a b"`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
