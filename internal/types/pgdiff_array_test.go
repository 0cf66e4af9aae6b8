package types_test

import (
	"math/rand"
	"strconv"
	"strings"

	"github.com/runneldb/runnel/internal/types"
)

// arrayDiffCases are array_in / array_out / array_send / array_recv cases
// for TestDifferentialText: quoting, escapes, white space, NULL elements,
// empty arrays, malformed literals (with PostgreSQL's detail) and element
// input errors.
func arrayDiffCases() []diffCase {
	elemGen := func(gen func(r *rand.Rand) string) func(r *rand.Rand) string {
		return func(r *rand.Rand) string {
			n := r.Intn(5)
			parts := make([]string, n)
			for i := range parts {
				switch r.Intn(8) {
				case 0:
					parts[i] = pick(r, "NULL", "null", "NuLl")
				case 1:
					parts[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(gen(r)) + `"`
				default:
					// Raw braces would make a nested (multidimensional)
					// literal, which Runnel refuses with 0A000.
					parts[i] = randSpace(r) + strings.NewReplacer("{", `\{`, "}", `\}`).Replace(gen(r)) + randSpace(r)
				}
			}
			return randSpace(r) + "{" + strings.Join(parts, ",") + "}" + randSpace(r)
		}
	}
	word := func(r *rand.Rand) string {
		return pick(r, "a", "b c", "", "NULL", "x,y", "q\"q", "back\\slash", "{", "}", "é", " lead", "trail ", "tab\t", "nl\n", "1")
	}
	return []diffCase{
		{
			name: "int4[]", sqlType: "integer[]", typ: types.ArrayOf(types.Int32),
			edge:        []string{"{}", "{1,2,3}", " { 1 , 2 } ", "{NULL}", "{null,1}", `{"1"}`, `{"NULL"}`, "{1,}", "{,1}", "{", "}", "", "1", "{1}x", "{1} ", "{a}", "{2147483648}", "{ }", `{"1" }`, `{"1"x}`, `{1"2"}`, "{1 2}", `{\1}`, "{1,NULL,3}"},
			gen:         elemGen(func(r *rand.Rand) string { return strconv.Itoa(r.Intn(2000) - 1000) }),
			checkDetail: true,
		},
		{
			name: "text[]", sqlType: "text[]", typ: types.ArrayOf(types.Text),
			edge:        []string{"{}", `{a,b}`, `{"a b"}`, `{a b}`, `{""}`, `{"NULL"}`, `{NULL}`, `{"a\"b"}`, `{a\"b}`, `{a\,b}`, `{"\\"}`, `{ a , b }`, `{"{"}`, `{\ a\ }`, `{"a" "b"}`, `{é}`, `{a\}`},
			gen:         elemGen(word),
			checkDetail: true,
		},
		{
			name: "varchar(3)[]", sqlType: "varchar(3)[]", typ: types.ArrayOf(types.Type{Kind: types.KindVarchar, Mod: 3}),
			edge: []string{"{ab,abc}", "{\"abc   \"}", "{NULL}"},
		},
		{
			name: "numeric[]", sqlType: "numeric[]", typ: types.ArrayOf(types.Numeric),
			edge: []string{"{1.50,-0.0,NaN,Infinity}", "{1e3,NULL}", "{abc}", "{}"},
			gen:  elemGen(func(r *rand.Rand) string { return strconv.Itoa(r.Intn(1000)) + "." + randDigits(r, r.Intn(4)) }),
		},
		{
			name: "float8[]", sqlType: "float8[]", typ: types.ArrayOf(types.Float64),
			edge: []string{"{1.5,-0,NaN,Infinity,-Infinity,1e300}", "{0.1}"},
		},
		{
			name: "bool[]", sqlType: "bool[]", typ: types.ArrayOf(types.Bool),
			edge: []string{"{t,f,NULL}", "{true, false}", "{yes}", "{maybe}"},
		},
		{
			name: "timestamp[]", sqlType: "timestamp[]", typ: types.ArrayOf(types.Timestamp),
			edge: []string{`{"2020-01-02 03:04:05","1999-12-31 23:59:59.5"}`, "{2020-01-02}", "{infinity,-infinity}", "{NULL}"},
		},
		{
			name: "date[]", sqlType: "date[]", typ: types.ArrayOf(types.Date),
			edge: []string{"{2020-01-02,1999-12-31}", "{infinity}"},
		},
		{
			name: "interval[]", sqlType: "interval[]", typ: types.ArrayOf(types.Interval),
			edge: []string{`{"1 day","2 hours"}`, `{1 mon}`},
		},
		{
			name: "jsonb[]", sqlType: "jsonb[]", typ: types.ArrayOf(types.Jsonb),
			edge: []string{`{"{\"a\": 1}","[1, 2]",null,"\"s\""}`, `{1,true}`, `{"{"}`},
		},
		{
			name: "bytea[]", sqlType: "bytea[]", typ: types.ArrayOf(types.Bytea),
			edge: []string{`{"\\\\x0102",abc}`},
		},
		{
			name: "int8[]", sqlType: "bigint[]", typ: types.ArrayOf(types.Int64),
			edge: []string{"{9223372036854775807,-9223372036854775808}", "{9223372036854775808}"},
		},
		{
			name: "smallint[]", sqlType: "smallint[]", typ: types.ArrayOf(types.Int16),
			edge: []string{"{1,-2}"},
		},
		{
			name: "uuid[]", sqlType: "uuid[]", typ: types.ArrayOf(types.UUID),
			edge: []string{"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"},
		},
	}
}
