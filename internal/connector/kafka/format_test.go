package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/types"
)

// TestJSONDatumRules pins the JSON → column conversions the decoders
// share (RisingWave's rule: a value that does not fit is NULL, never a
// skipped record).
func TestJSONDatumRules(t *testing.T) {
	cases := []struct {
		typ  types.Type
		json string
		want string // text form; "NULL"
	}{
		{types.Int64, `42`, "42"},
		{types.Int64, `-7`, "-7"},
		{types.Int64, `3.0`, "3"},
		{types.Int64, `1e3`, "1000"},
		{types.Int64, `3.5`, "NULL"},
		{types.Int64, `"17"`, "17"},
		{types.Int64, `"x"`, "NULL"},
		{types.Int64, `true`, "NULL"},
		{types.Int64, `{"a": 1}`, "NULL"},
		{types.Int64, `null`, "NULL"},
		{types.Int32, `2147483648`, "NULL"},
		{types.Int32, `-2147483648`, "-2147483648"},
		{types.Int16, `40000`, "NULL"},
		{types.Int16, `12`, "12"},
		{types.Float64, `1.5e2`, "150"},
		{types.Float64, `"2.25"`, "2.25"},
		{types.Numeric, `12.340`, "12.340"},
		{types.Bool, `true`, "t"},
		{types.Bool, `false`, "f"},
		{types.Bool, `1`, "NULL"},
		{types.Varchar, `"a\"b\u00e9"`, `a"bé`},
		{types.Varchar, `12`, "NULL"},
		{types.Timestamp, `"2026-01-01 10:00:00.5"`, "2026-01-01 10:00:00.5"},
		{types.Timestamp, `1767225600000`, "2026-01-01 00:00:00"},
		{types.Jsonb, `{"b": [1, "x"], "a": null}`, `{"a": null, "b": [1, "x"]}`},
		{types.Jsonb, `"s"`, `"s"`},
	}
	for _, c := range cases {
		spec := connector.Spec{Columns: []connector.Column{{Name: "c", Type: c.typ}}, Options: map[string]string{"topic": "t", "properties.bootstrap.server": "x:1"}}
		cfg, err := ParseOptions(spec)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := newDecoder(cfg, spec)
		if err != nil {
			t.Fatal(err)
		}
		var out types.Chunk
		if err := dec.decode(&kgo.Record{Value: []byte(`{"c": ` + c.json + `}`)}, &out); err != nil {
			t.Fatalf("%s as %v: %v", c.json, c.typ, err)
		}
		got := "NULL"
		if d := out.Rows[0][0]; !d.IsNull() {
			got = types.FormatText(d, c.typ, nil)
		}
		if got != c.want {
			t.Errorf("%s as %v: got %s; want %s", c.json, c.typ, got, c.want)
		}
	}
}

// TestMalformedJSONIsSkipped: what is not a JSON object is an error (the
// record is skipped and counted), never a panic.
func TestMalformedJSONIsSkipped(t *testing.T) {
	spec := connector.Spec{Columns: []connector.Column{{Name: "c", Type: types.Int64}}, Options: map[string]string{"topic": "t", "properties.bootstrap.server": "x:1"}}
	cfg, _ := ParseOptions(spec)
	dec, _ := newDecoder(cfg, spec)
	for _, v := range []string{``, `{`, `[1]`, `"s"`, `{"c": 1}}`, `{"c": }`, "\x00"} {
		var out types.Chunk
		if err := dec.decode(&kgo.Record{Value: []byte(v)}, &out); err == nil {
			t.Errorf("%q: decoded to %v; want an error", v, out.Rows)
		}
	}
}
