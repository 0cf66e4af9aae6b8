package bench

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// A TPC-H data generator (TPC-H specification 2.x/3.x, clause 4.2): the
// eight tables with the spec's keys, cardinalities and value
// distributions at a scale factor, seeded and deterministic. It is not
// byte-identical to dbgen (its random streams and text pool are its own)
// but follows the same rules: sparse order keys (8 of every 32),
// customers whose key is divisible by 3 place no orders, each part's four
// suppliers by the spec's formula, line items priced from the part's
// retail price, ship/commit/receipt dates offset from the order date,
// return flag and line status against CURRENTDATE 1995-06-17, order status
// and total price derived from the order's line items, the spec's word
// lists for part names, types and containers, and comments cut from a text
// pool built of the spec's grammar words (so the queries' LIKE patterns,
// '%special%requests%', '%Customer%Complaints%', 'forest%', find rows).
//
// Text columns are VARCHAR on both systems (the spec's fixed-length CHAR
// columns would pad differently), money NUMERIC(15,2), dates DATE.

// tpchSchema is the DDL of the eight tables (primary keys as the spec's
// clause 1.4.2 names them).
var tpchSchema = []string{
	`CREATE TABLE region (r_regionkey INTEGER PRIMARY KEY, r_name VARCHAR(25) NOT NULL, r_comment VARCHAR(152))`,
	`CREATE TABLE nation (n_nationkey INTEGER PRIMARY KEY, n_name VARCHAR(25) NOT NULL, n_regionkey INTEGER NOT NULL, n_comment VARCHAR(152))`,
	`CREATE TABLE part (p_partkey INTEGER PRIMARY KEY, p_name VARCHAR(55) NOT NULL, p_mfgr VARCHAR(25) NOT NULL, p_brand VARCHAR(10) NOT NULL,
		p_type VARCHAR(25) NOT NULL, p_size INTEGER NOT NULL, p_container VARCHAR(10) NOT NULL, p_retailprice NUMERIC(15,2) NOT NULL, p_comment VARCHAR(23) NOT NULL)`,
	`CREATE TABLE supplier (s_suppkey INTEGER PRIMARY KEY, s_name VARCHAR(25) NOT NULL, s_address VARCHAR(40) NOT NULL, s_nationkey INTEGER NOT NULL,
		s_phone VARCHAR(15) NOT NULL, s_acctbal NUMERIC(15,2) NOT NULL, s_comment VARCHAR(101) NOT NULL)`,
	`CREATE TABLE partsupp (ps_partkey INTEGER NOT NULL, ps_suppkey INTEGER NOT NULL, ps_availqty INTEGER NOT NULL, ps_supplycost NUMERIC(15,2) NOT NULL,
		ps_comment VARCHAR(199) NOT NULL, PRIMARY KEY (ps_partkey, ps_suppkey))`,
	`CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_name VARCHAR(25) NOT NULL, c_address VARCHAR(40) NOT NULL, c_nationkey INTEGER NOT NULL,
		c_phone VARCHAR(15) NOT NULL, c_acctbal NUMERIC(15,2) NOT NULL, c_mktsegment VARCHAR(10) NOT NULL, c_comment VARCHAR(117) NOT NULL)`,
	`CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER NOT NULL, o_orderstatus VARCHAR(1) NOT NULL, o_totalprice NUMERIC(15,2) NOT NULL,
		o_orderdate DATE NOT NULL, o_orderpriority VARCHAR(15) NOT NULL, o_clerk VARCHAR(15) NOT NULL, o_shippriority INTEGER NOT NULL, o_comment VARCHAR(79) NOT NULL)`,
	`CREATE TABLE lineitem (l_orderkey INTEGER NOT NULL, l_partkey INTEGER NOT NULL, l_suppkey INTEGER NOT NULL, l_linenumber INTEGER NOT NULL,
		l_quantity NUMERIC(15,2) NOT NULL, l_extendedprice NUMERIC(15,2) NOT NULL, l_discount NUMERIC(15,2) NOT NULL, l_tax NUMERIC(15,2) NOT NULL,
		l_returnflag VARCHAR(1) NOT NULL, l_linestatus VARCHAR(1) NOT NULL, l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, l_receiptdate DATE NOT NULL,
		l_shipinstruct VARCHAR(25) NOT NULL, l_shipmode VARCHAR(10) NOT NULL, l_comment VARCHAR(44) NOT NULL, PRIMARY KEY (l_orderkey, l_linenumber))`,
}

// TPCHTables are the tables in load order.
var TPCHTables = []string{"region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"}

var (
	tpchRegions = []string{"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}
	tpchNations = []struct {
		name   string
		region int
	}{
		{"ALGERIA", 0}, {"ARGENTINA", 1}, {"BRAZIL", 1}, {"CANADA", 1}, {"EGYPT", 4}, {"ETHIOPIA", 0}, {"FRANCE", 3}, {"GERMANY", 3},
		{"INDIA", 2}, {"INDONESIA", 2}, {"IRAN", 4}, {"IRAQ", 4}, {"JAPAN", 2}, {"JORDAN", 4}, {"KENYA", 0}, {"MOROCCO", 0},
		{"MOZAMBIQUE", 0}, {"PERU", 1}, {"CHINA", 2}, {"ROMANIA", 3}, {"SAUDI ARABIA", 4}, {"VIETNAM", 2}, {"RUSSIA", 3},
		{"UNITED KINGDOM", 3}, {"UNITED STATES", 1},
	}
	tpchColors = []string{"almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue", "blush",
		"brown", "burlywood", "burnished", "chartreuse", "chiffon", "chocolate", "coral", "cornflower", "cornsilk", "cream",
		"cyan", "dark", "deep", "dim", "dodger", "drab", "firebrick", "floral", "forest", "frosted", "gainsboro", "ghost",
		"goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory", "khaki", "lace", "lavender", "lawn", "lemon",
		"light", "lime", "linen", "magenta", "maroon", "medium", "metallic", "midnight", "mint", "misty", "moccasin", "navajo",
		"navy", "olive", "orange", "orchid", "pale", "papaya", "peach", "peru", "pink", "plum", "powder", "puff", "purple",
		"red", "rose", "rosy", "royal", "saddle", "salmon", "sandy", "seashell", "sienna", "sky", "slate", "smoke", "snow",
		"spring", "steel", "tan", "thistle", "tomato", "turquoise", "violet", "wheat", "white", "yellow"}
	tpchTypes1      = []string{"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"}
	tpchTypes2      = []string{"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"}
	tpchTypes3      = []string{"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"}
	tpchContainers1 = []string{"SM", "LG", "MED", "JUMBO", "WRAP"}
	tpchContainers2 = []string{"CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"}
	tpchSegments    = []string{"AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"}
	tpchPriorities  = []string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
	tpchInstructs   = []string{"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"}
	tpchShipModes   = []string{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}

	// The grammar's word classes (clause 4.2.2.13).
	tpchNouns = []string{"foxes", "ideas", "theodolites", "pinto beans", "instructions", "dependencies", "excuses", "platelets",
		"asymptotes", "courts", "dolphins", "multipliers", "sauternes", "warthogs", "frets", "dinos", "attainments", "somas",
		"Tiresias", "patterns", "forges", "braids", "hockey players", "frays", "warhorses", "dugouts", "notornis", "epitaphs",
		"pearls", "tithes", "waters", "orbits", "gifts", "sheaves", "depths", "sentiments", "decoys", "realms", "pains",
		"grouches", "escapades", "packages", "requests", "accounts", "deposits"}
	tpchVerbs = []string{"sleep", "wake", "are", "cajole", "haggle", "nag", "use", "boost", "affix", "detect", "integrate",
		"maintain", "nod", "was", "lose", "sublate", "solve", "thrash", "promise", "engage", "hinder", "print", "x-ray",
		"breach", "eat", "grow", "impress", "mold", "poach", "serve", "run", "dazzle", "snooze", "doze", "unwind", "kindle",
		"play", "hang", "believe", "doubt"}
	tpchAdjectives = []string{"furious", "sly", "careful", "blithe", "quick", "fluffy", "slow", "quiet", "ruthless", "thin",
		"close", "dogged", "daring", "brave", "stealthy", "permanent", "enticing", "idle", "busy", "regular", "final",
		"ironic", "even", "bold", "silent", "special", "pending", "unusual", "express"}
	tpchAdverbs = []string{"sometimes", "always", "never", "furiously", "slyly", "carefully", "blithely", "quickly",
		"fluffily", "slowly", "quietly", "ruthlessly", "thinly", "closely", "doggedly", "daringly", "bravely", "stealthily",
		"permanently", "enticingly", "idly", "busily", "regularly", "finally", "ironically", "evenly", "boldly", "silently"}
	tpchPrepositions = []string{"about", "above", "according to", "across", "after", "against", "along", "alongside of",
		"among", "around", "at", "atop", "before", "behind", "beneath", "beside", "besides", "between", "beyond", "by",
		"despite", "during", "except", "for", "from", "in place of", "inside", "instead of", "into", "near", "of", "on",
		"outside", "over", "past", "since", "through", "throughout", "to", "toward", "under", "until", "up", "upon",
		"without", "with", "within"}
	tpchTerminators = []string{".", ";", ":", "?", "!", "--"}
)

// Dates as days since 1992-01-01 (STARTDATE).
var (
	tpchEpoch       = time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)
	tpchEndDay      = int(time.Date(1998, 12, 31, 0, 0, 0, 0, time.UTC).Sub(tpchEpoch).Hours() / 24)
	tpchCurrentDay  = int(time.Date(1995, 6, 17, 0, 0, 0, 0, time.UTC).Sub(tpchEpoch).Hours() / 24)
	tpchDateStrings = func() []string {
		s := make([]string, tpchEndDay+200)
		for i := range s {
			s[i] = tpchEpoch.AddDate(0, 0, i).Format("2006-01-02")
		}
		return s
	}()
)

// tpchTextPoolSize is the size of the comment text pool (dbgen's is
// 300 MB; comments are cut from it at random offsets either way).
const tpchTextPoolSize = 4 << 20

// TPCHGen generates the TPC-H tables at a scale factor.
type TPCHGen struct {
	Scale float64
	Seed  uint64

	suppliers, parts, customers, orders, clerks int64
	pool                                        []byte
}

// NewTPCHGen returns a generator for scale factor scale (> 0).
func NewTPCHGen(scale float64, seed uint64) *TPCHGen {
	n := func(base float64, least int64) int64 { return max(least, int64(base*scale)) }
	g := &TPCHGen{Scale: scale, Seed: seed, suppliers: n(10_000, 4), parts: n(200_000, 1), customers: n(150_000, 3),
		orders: n(1_500_000, 1), clerks: n(1_000, 1)}
	g.pool = g.textPool()
	return g
}

// Rows returns the number of rows of table (lineitem: an estimate, 4 per
// order on average).
func (g *TPCHGen) Rows(table string) int64 {
	switch table {
	case "region":
		return 5
	case "nation":
		return 25
	case "part":
		return g.parts
	case "supplier":
		return g.suppliers
	case "partsupp":
		return 4 * g.parts
	case "customer":
		return g.customers
	case "orders":
		return g.orders
	case "lineitem":
		return 4 * g.orders
	}
	return 0
}

// rng returns the random stream of one table's row (or of one order and
// its line items): independent of the order rows are generated in.
func (g *TPCHGen) rng(table int, row int64) *rand.Rand {
	return rand.New(rand.NewPCG(g.Seed^uint64(table)<<56, uint64(row)*0x9e3779b97f4a7c15+uint64(table)))
}

func between(r *rand.Rand, lo, hi int64) int64 { return lo + r.Int64N(hi-lo+1) }

func pick(r *rand.Rand, words []string) string { return words[r.IntN(len(words))] }

// textPool builds the comment text from the spec's sentence grammar.
func (g *TPCHGen) textPool() []byte {
	r := g.rng(15, 0)
	var b bytes.Buffer
	nounPhrase := func() {
		switch r.IntN(4) {
		case 0:
			b.WriteString(pick(r, tpchNouns))
		case 1:
			b.WriteString(pick(r, tpchAdjectives) + " " + pick(r, tpchNouns))
		case 2:
			b.WriteString(pick(r, tpchAdjectives) + ", " + pick(r, tpchAdjectives) + " " + pick(r, tpchNouns))
		default:
			b.WriteString(pick(r, tpchAdverbs) + " " + pick(r, tpchAdjectives) + " " + pick(r, tpchNouns))
		}
	}
	verbPhrase := func() {
		switch r.IntN(4) {
		case 0:
			b.WriteString(pick(r, tpchVerbs))
		case 1:
			b.WriteString("might " + pick(r, tpchVerbs))
		case 2:
			b.WriteString(pick(r, tpchVerbs) + " " + pick(r, tpchAdverbs))
		default:
			b.WriteString("will " + pick(r, tpchVerbs) + " " + pick(r, tpchAdverbs))
		}
	}
	for b.Len() < tpchTextPoolSize {
		nounPhrase()
		b.WriteByte(' ')
		verbPhrase()
		if r.IntN(2) == 0 {
			b.WriteString(" " + pick(r, tpchPrepositions) + " the ")
			nounPhrase()
		}
		b.WriteString(pick(r, tpchTerminators) + " ")
	}
	return b.Bytes()
}

// text appends a comment of between lo and hi characters cut from the pool.
func (g *TPCHGen) text(b []byte, r *rand.Rand, lo, hi int) []byte {
	n := int(between(r, int64(lo), int64(hi)))
	off := r.IntN(len(g.pool) - n)
	return append(b, bytes.TrimSpace(g.pool[off:off+n])...)
}

const tpchAlnum = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,. "

func vstring(b []byte, r *rand.Rand, lo, hi int) []byte {
	n := int(between(r, int64(lo), int64(hi)))
	start := len(b)
	for i := 0; i < n; i++ {
		b = append(b, tpchAlnum[r.IntN(len(tpchAlnum))])
	}
	// No leading/trailing blank: both systems keep it, but it reads badly.
	if b[start] == ' ' {
		b[start] = 'x'
	}
	if b[len(b)-1] == ' ' {
		b[len(b)-1] = 'x'
	}
	return b
}

// money appends cents as a decimal with two places.
func money(b []byte, cents int64) []byte {
	if cents < 0 {
		b = append(b, '-')
		cents = -cents
	}
	b = strconv.AppendInt(b, cents/100, 10)
	b = append(b, '.', byte('0'+cents%100/10), byte('0'+cents%10))
	return b
}

func phone(b []byte, r *rand.Rand, nation int64) []byte {
	return fmt.Appendf(b, "%02d-%03d-%03d-%04d", nation+10, between(r, 100, 999), between(r, 100, 999), between(r, 1000, 9999))
}

// retailPrice is clause 4.2.3's P_RETAILPRICE in cents.
func retailPrice(partkey int64) int64 {
	return 90000 + (partkey/10)%20001 + 100*(partkey%1000)
}

// partSupplier is the i-th (0..3) supplier of partkey (clause 4.2.3).
// At scale factors below about 0.01 the formula can repeat a supplier;
// a repeat moves to the next supplier not taken by an earlier i.
func (g *TPCHGen) partSupplier(partkey, i int64) int64 {
	s := g.suppliers
	var taken [4]int64
	for k := int64(0); k <= i; k++ {
		taken[k] = (partkey+k*(s/4+(partkey-1)/s))%s + 1
		for slices.Contains(taken[:k], taken[k]) {
			taken[k] = taken[k]%s + 1
		}
	}
	return taken[i]
}

// orderKey maps the i-th order (0-based) to its sparse key: the first 8
// of every 32 keys are used.
func orderKey(i int64) int64 { return i/8*32 + i%8 + 1 }

// Generate writes table's rows lo..hi-1 (row indexes, 0-based) in COPY
// text format to b and returns it with the number of rows written.
func (g *TPCHGen) Generate(b []byte, table string, lo, hi int64) ([]byte, int64) {
	var n int64
	tab := func() { b = append(b, '\t') }
	for i := lo; i < hi; i++ {
		switch table {
		case "region":
			r := g.rng(1, i)
			b = strconv.AppendInt(b, i, 10)
			tab()
			b = append(b, tpchRegions[i]...)
			tab()
			b = g.text(b, r, 31, 115)
		case "nation":
			r := g.rng(2, i)
			b = fmt.Appendf(b, "%d\t%s\t%d\t", i, tpchNations[i].name, tpchNations[i].region)
			b = g.text(b, r, 31, 114)
		case "part":
			r, key := g.rng(3, i), i+1
			b = strconv.AppendInt(b, key, 10)
			tab()
			// Five distinct colours.
			var idx [5]int
			for k := 0; k < 5; k++ {
			again:
				idx[k] = r.IntN(len(tpchColors))
				for j := 0; j < k; j++ {
					if idx[j] == idx[k] {
						goto again
					}
				}
				if k > 0 {
					b = append(b, ' ')
				}
				b = append(b, tpchColors[idx[k]]...)
			}
			m := between(r, 1, 5)
			b = fmt.Appendf(b, "\tManufacturer#%d\tBrand#%d%d\t%s %s %s\t%d\t%s %s\t", m, m, between(r, 1, 5),
				pick(r, tpchTypes1), pick(r, tpchTypes2), pick(r, tpchTypes3), between(r, 1, 50),
				pick(r, tpchContainers1), pick(r, tpchContainers2))
			b = money(b, retailPrice(key))
			tab()
			b = g.text(b, r, 5, 22)
		case "supplier":
			r, key := g.rng(4, i), i+1
			nation := between(r, 0, 24)
			b = fmt.Appendf(b, "%d\tSupplier#%09d\t", key, key)
			b = vstring(b, r, 10, 40)
			b = fmt.Appendf(b, "\t%d\t", nation)
			b = phone(b, r, nation)
			tab()
			b = money(b, between(r, -99999, 999999))
			tab()
			// Clause 4.2.3: 5 suppliers per 10,000 get a "Customer ...
			// Complaints" comment and 5 a "Customer ... Recommends" one.
			c := g.text(nil, r, 25, 100)
			switch k := r.IntN(10_000); {
			case k < 5:
				b = append(b, fmt.Sprintf("%.20s Customer %s Complaints", c, pick(r, tpchNouns))...)
			case k < 10:
				b = append(b, fmt.Sprintf("%.20s Customer %s Recommends", c, pick(r, tpchNouns))...)
			default:
				b = append(b, c...)
			}
		case "partsupp":
			r, part, k := g.rng(5, i), i/4+1, i%4
			b = fmt.Appendf(b, "%d\t%d\t%d\t", part, g.partSupplier(part, k), between(r, 1, 9999))
			b = money(b, between(r, 100, 100000))
			tab()
			b = g.text(b, r, 49, 198)
		case "customer":
			r, key := g.rng(6, i), i+1
			nation := between(r, 0, 24)
			b = fmt.Appendf(b, "%d\tCustomer#%09d\t", key, key)
			b = vstring(b, r, 10, 40)
			b = fmt.Appendf(b, "\t%d\t", nation)
			b = phone(b, r, nation)
			tab()
			b = money(b, between(r, -99999, 999999))
			b = append(b, '\t')
			b = append(b, pick(r, tpchSegments)...)
			tab()
			b = g.text(b, r, 29, 116)
		case "orders":
			o := g.order(i)
			b = fmt.Appendf(b, "%d\t%d\t%c\t", o.key, o.cust, o.status)
			b = money(b, o.total)
			b = fmt.Appendf(b, "\t%s\t%s\tClerk#%09d\t0\t", tpchDateStrings[o.date], o.priority, o.clerk)
			b = append(b, o.comment...)
		case "lineitem":
			o := g.order(i)
			for j, l := range o.lines {
				if j > 0 {
					b = append(b, '\n')
					n++
				}
				b = fmt.Appendf(b, "%d\t%d\t%d\t%d\t%d.00\t", o.key, l.part, l.supp, j+1, l.qty)
				b = money(b, l.price)
				b = fmt.Appendf(b, "\t0.%02d\t0.%02d\t%c\t%c\t%s\t%s\t%s\t%s\t%s\t", l.disc, l.tax, l.flag, l.status,
					tpchDateStrings[l.ship], tpchDateStrings[l.commit], tpchDateStrings[l.receipt], l.instruct, l.mode)
				b = append(b, l.comment...)
			}
		}
		b = append(b, '\n')
		n++
	}
	return b, n
}

type tpchLine struct {
	part, supp, qty, price, disc, tax int64
	ship, commit, receipt             int
	flag, status                      byte
	instruct, mode                    string
	comment                           []byte
}

type tpchOrder struct {
	key, cust, total, clerk int64
	date                    int
	status                  byte
	priority                string
	comment                 []byte
	lines                   []tpchLine
}

// order generates the i-th order with its line items (one random stream,
// so ORDERS and LINEITEM agree whichever is generated first).
func (g *TPCHGen) order(i int64) tpchOrder {
	r := g.rng(7, i)
	o := tpchOrder{key: orderKey(i), date: int(between(r, 0, int64(tpchEndDay-151))), priority: pick(r, tpchPriorities),
		clerk: between(r, 1, g.clerks)}
	for {
		// Customers whose key is divisible by 3 place no orders.
		if o.cust = between(r, 1, g.customers); o.cust%3 != 0 {
			break
		}
	}
	o.comment = g.text(nil, r, 19, 78)
	nl := between(r, 1, 7)
	var done int
	for j := int64(0); j < nl; j++ {
		l := tpchLine{part: between(r, 1, g.parts), qty: between(r, 1, 50), disc: between(r, 0, 10), tax: between(r, 0, 8),
			instruct: pick(r, tpchInstructs), mode: pick(r, tpchShipModes)}
		l.supp = g.partSupplier(l.part, r.Int64N(4))
		l.price = l.qty * retailPrice(l.part)
		l.ship = o.date + int(between(r, 1, 121))
		l.commit = o.date + int(between(r, 30, 90))
		l.receipt = l.ship + int(between(r, 1, 30))
		l.flag = 'N'
		if l.receipt <= tpchCurrentDay {
			l.flag = "RA"[r.IntN(2)]
		}
		l.status = 'O'
		if l.ship <= tpchCurrentDay {
			l.status = 'F'
			done++
		}
		l.comment = g.text(nil, r, 10, 43)
		// Clause 4.2.3: sum of extendedprice * (1+tax) * (1-discount),
		// rounded to cents per line.
		o.total += (l.price*(100+l.tax)*(100-l.disc) + 5000) / 10000
		o.lines = append(o.lines, l)
	}
	switch done {
	case 0:
		o.status = 'O'
	case len(o.lines):
		o.status = 'F'
	default:
		o.status = 'P'
	}
	return o
}
