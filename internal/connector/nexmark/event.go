package nexmark

import (
	"strings"

	"github.com/runneldb/runnel/internal/connector"
	"github.com/runneldb/runnel/internal/types"
)

// TableType is one of the three Nexmark event kinds, each of which a source
// exposes as its own table (nexmark.table.type).
type TableType uint8

const (
	TypePerson TableType = iota
	TypeAuction
	TypeBid
)

func (t TableType) String() string {
	switch t {
	case TypePerson:
		return "person"
	case TypeAuction:
		return "auction"
	case TypeBid:
		return "bid"
	}
	return "unknown"
}

// ParseTableType reads a table type name, case-insensitively ("Bid", "bid",
// "BID" all work; RisingWave's documentation writes "Bid").
func ParseTableType(s string) (TableType, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "person":
		return TypePerson, true
	case "auction":
		return TypeAuction, true
	case "bid":
		return TypeBid, true
	}
	return 0, false
}

// The event mix: in every group of 50 consecutive ids, slot 0 is a person,
// slots 1..3 are auctions and slots 4..49 are bids.
const (
	personProportion  = 1
	auctionProportion = 3
	bidProportion     = 46
	totalProportion   = personProportion + auctionProportion + bidProportion

	// FirstPersonID and FirstAuctionID are the ids of the first person and
	// auction; FirstCategoryID the lowest category.
	FirstPersonID   = 1000
	FirstAuctionID  = 1000
	FirstCategoryID = 10

	// hotBatch: a hot key is the first id of the latest batch of this many.
	hotBatch = 100
)

// TypeOf returns the kind of event n (n >= 0).
func TypeOf(n int64) TableType {
	r := n % totalProportion
	switch {
	case r < personProportion:
		return TypePerson
	case r < personProportion+auctionProportion:
		return TypeAuction
	}
	return TypeBid
}

// EventID returns the id of the k-th (0-based) event of type t: the inverse
// of Ordinal. Splits of a single-table source divide these per-table
// ordinals (not raw event ids) by offset/step, so every split gets an equal
// share of the table's rows whatever the split count.
func EventID(t TableType, k int64) int64 {
	switch t {
	case TypePerson:
		return k * totalProportion
	case TypeAuction:
		return k/auctionProportion*totalProportion + personProportion + k%auctionProportion
	}
	return k/bidProportion*totalProportion + personProportion + auctionProportion + k%bidProportion
}

// Ordinal returns the type of event n and its index among the events of
// that type.
func Ordinal(n int64) (TableType, int64) {
	g, r := n/totalProportion, n%totalProportion
	switch {
	case r < personProportion:
		return TypePerson, g*personProportion + r
	case r < personProportion+auctionProportion:
		return TypeAuction, g*auctionProportion + r - personProportion
	}
	return TypeBid, g*bidProportion + r - personProportion - auctionProportion
}

// countBelow returns how many events of type t have an id below m.
func countBelow(t TableType, m int64) int64 {
	if m <= 0 {
		return 0
	}
	g, r := m/totalProportion, m%totalProportion
	clamp := func(v, hi int64) int64 { return max(0, min(v, hi)) }
	switch t {
	case TypePerson:
		return g*personProportion + clamp(r, personProportion)
	case TypeAuction:
		return g*auctionProportion + clamp(r-personProportion, auctionProportion)
	}
	return g*bidProportion + clamp(r-personProportion-auctionProportion, bidProportion)
}

// lastPerson is the 0-based index of the newest person at event n.
func lastPerson(n int64) int64 { return n / totalProportion }

// lastAuction is the 0-based index of the newest auction at event n; -1
// before the first auction. Events before the first auction slot of their
// group (the person) see the previous group's last auction.
func lastAuction(n int64) int64 {
	g, r := n/totalProportion, n%totalProportion
	return g*auctionProportion + min(max(r-personProportion+1, 0), auctionProportion) - 1
}

// Person is a new user. DateTime is in microseconds since the Unix epoch.
type Person struct {
	ID           int64
	Name         string
	EmailAddress string
	CreditCard   string
	City         string
	State        string
	DateTime     int64
	Extra        string
}

// Auction is an item put up for sale. DateTime and Expires are in
// microseconds since the Unix epoch.
type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64
	Reserve     int64
	DateTime    int64
	Expires     int64
	Seller      int64
	Category    int64
	Extra       string
}

// Bid is a bid on an auction. DateTime is in microseconds since the Unix
// epoch.
type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64
	Channel  string
	URL      string
	DateTime int64
	Extra    string
}

// Event is one event of the stream; only the field named by Type is set.
type Event struct {
	ID      int64
	Type    TableType
	Person  Person
	Auction Auction
	Bid     Bid
}

// DateTime returns the event's timestamp.
func (e *Event) DateTime() int64 {
	switch e.Type {
	case TypePerson:
		return e.Person.DateTime
	case TypeAuction:
		return e.Auction.DateTime
	}
	return e.Bid.DateTime
}

var (
	personColumns = []connector.Column{
		{Name: "id", Type: types.Int64},
		{Name: "name", Type: types.Varchar},
		{Name: "email_address", Type: types.Varchar},
		{Name: "credit_card", Type: types.Varchar},
		{Name: "city", Type: types.Varchar},
		{Name: "state", Type: types.Varchar},
		{Name: "date_time", Type: types.Timestamp},
		{Name: "extra", Type: types.Varchar},
	}
	auctionColumns = []connector.Column{
		{Name: "id", Type: types.Int64},
		{Name: "item_name", Type: types.Varchar},
		{Name: "description", Type: types.Varchar},
		{Name: "initial_bid", Type: types.Int64},
		{Name: "reserve", Type: types.Int64},
		{Name: "date_time", Type: types.Timestamp},
		{Name: "expires", Type: types.Timestamp},
		{Name: "seller", Type: types.Int64},
		{Name: "category", Type: types.Int64},
		{Name: "extra", Type: types.Varchar},
	}
	bidColumns = []connector.Column{
		{Name: "auction", Type: types.Int64},
		{Name: "bidder", Type: types.Int64},
		{Name: "price", Type: types.Int64},
		{Name: "channel", Type: types.Varchar},
		{Name: "url", Type: types.Varchar},
		{Name: "date_time", Type: types.Timestamp},
		{Name: "extra", Type: types.Varchar},
	}
)

// Columns returns the schema of table type t, in the order rows are filled.
// The slice is shared: do not modify it.
func (t TableType) Columns() []connector.Column {
	switch t {
	case TypePerson:
		return personColumns
	case TypeAuction:
		return auctionColumns
	}
	return bidColumns
}

// Columns returns the schema of the named table ("person", "auction",
// "bid", case-insensitive), or nil for an unknown name. The slice is
// shared: do not modify it.
func Columns(table string) []connector.Column {
	t, ok := ParseTableType(table)
	if !ok {
		return nil
	}
	return t.Columns()
}
