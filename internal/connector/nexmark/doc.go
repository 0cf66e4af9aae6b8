// Package nexmark generates the Nexmark benchmark stream: people, auctions
// and bids of an online auction, written from the rules in
// /work/shared/design/NEXMARK.md.
//
// # Events
//
// Event ids n = 0, 1, 2, ... decide the kind by r = n mod 50: r = 0 is a
// person, r in 1..3 an auction, r in 4..49 a bid (1 : 3 : 46). Every event
// is a pure function of (n, Config): its random choices come from a wyrand
// generator seeded with splitmix64(n, Config.Seed), so any event can be
// generated alone, in any order, on any goroutine (Generator.Event).
//
// # Rules (defaults; Config / options change them)
//
//   - Ids: people and auctions are numbered from 1000 in creation order;
//     categories are 10..14. lastPerson(n) = n/50; lastAuction(n) =
//     3·(n/50) + min(r, 3) - 1 (a group's person slot sees the previous
//     group's last auction).
//   - A random person is one of the last 1000 people, or up to 10 ids
//     ahead of the newest (the "lead": a reference may name a person that
//     appears within the next 10 persons, i.e. up to 500 events later).
//     A random auction is one of the last 100 auctions, or up to 10 ahead.
//     Over the first million events about 2.7% of references use the lead.
//   - Hot keys: a bid's auction is the first of the latest batch of 100
//     auctions with probability 1/2; its bidder is the first of the latest
//     batch of 100 people, +1, with probability 3/4; an auction's seller is
//     the first of the latest batch of 100 people with probability 3/4.
//     (A ratio R in the options means "hot with probability 1 - 1/R".)
//   - price = round(10^(6u))·100, u uniform in [0, 1): log-uniform from 100
//     to 100,000,000 (each decade ~1/6; rounding shifts ~0.4% from the
//     first decade to the second). initial_bid = price(); reserve =
//     initial_bid + price().
//   - Time: date_time(n) = BaseTime + floor(n·1e6/EventRate) µs, with
//     EventRate the rate of the whole stream (all kinds and all splits),
//     default 10,000 events/s: 100 µs of event time per event, so 1 M
//     events cover 100 s. BaseTime defaults to 2015-07-15 00:00:00 UTC.
//     Rows of one split come out in non-decreasing date_time (strictly
//     increasing while EventRate <= 1e6).
//   - Auction expiry: date_time + 1 ms + uniform[0, 2·horizon), horizon =
//     the event time of 1,666 events (100 auctions' worth; 166.6 ms at the
//     default rate).
//   - Channels: with probability 1/2 one of the hot channels Google,
//     Facebook, Baidu, Apple; otherwise "channel-i", i uniform in 0..9999.
//     A channel's URL is fixed per channel:
//     https://www.nexmark.com/<a>/<b>/<c>/item.htm?query=1 with 1..5-letter
//     path segments, plus &channel_id=<i bit-reversed as a uint32> for 9 of
//     10 non-hot channels (chosen per channel).
//   - People: name from 12 first × 10 last names, city from 10 cities in
//     the six states, state from az, ca, id, or, wa, wy. States are LOWER
//     CASE, because RisingWave's Nexmark q3 filters on
//     state = 'or' OR state = 'id' OR state = 'ca'.
//   - extra pads an event towards an average size of 200 (person), 500
//     (auction), 100 (bid) bytes, where size counts 8 bytes per bigint or
//     timestamp and the length of each varchar: for d = target - size, its
//     length is uniform in [d - d/5, d + d/5]. Persons and auctions average
//     the target exactly; a bid whose channel and URL already reach 100
//     bytes (a non-hot channel with channel_id) gets no padding, so bids
//     average ~108 bytes (the padded 55% average 100).
//
// Random strings (item names, descriptions, e-mail parts, extra) are cut
// from a 64 KiB pad of pseudo-random letters, and names, cities, channels
// and URLs are precomputed, so generating a bid allocates nothing.
//
// Determinism holds across machines too: price avoids math.Exp (whose
// last bit is architecture-specific) by a math/big-built table (price.go),
// and the rest is integer arithmetic.
//
// # Tables and splits
//
// A source exposes one kind as a table (nexmark.table.type): Person,
// Auction or Bid, with the columns of Columns(name). Its rows are
// addressed by per-table ordinal k (the k-th bid; EventID maps k to the
// event id), and split i of k splits produces the ordinals i, i+k, ... —
// so splits are balanced for any split count. A Reader holds one split's
// position; a source executor calls Reader.Next (fresh rows, safe to hand
// downstream) or Reader.Fill (caller-owned rows, reusable) for at most
// Config.MaxChunkSize rows between barriers, and checkpoints
// Reader.Position(). Measured (BenchmarkFillBidRows / BenchmarkAppendBidRows,
// CPU time from /usr/bin/time over 10 M rows): FillRows costs ~65 ns of CPU
// per bid row (~15 M rows/s per core; 4-9 M/s wall on the shared, loaded
// 2-core dev machine) with no allocation; AppendRows, which allocates fresh
// datums (336 bytes per bid row), ~340 ns of CPU per row including GC
// (1.4-2.7 M rows/s wall there).
//
// # Options (ParseOptions; keys case-insensitive)
//
//	nexmark.table.type           person | auction | bid (required)
//	nexmark.event.num            events of all kinds (ids 0..N-1); default unbounded
//	nexmark.split.num            parallel splits; default 1
//	nexmark.max.chunk.size       rows per chunk; default 1024
//	nexmark.min.event.gap.in.ns  wall-clock ns between rows of one split;
//	                             default 100000 (RisingWave's), 0 = unthrottled
//	nexmark.event.rate           event-time events/s of the whole stream; default 10000
//	  (alias nexmark.first.event.rate; nexmark.next.event.rate must agree)
//	nexmark.base.time            ms since the epoch or RFC 3339; default 2015-07-15T00:00:00Z
//	nexmark.seed                 stream variant (Runnel extension); default 0
//	nexmark.use.real.time        only false (event times are a function of the id)
//	nexmark.active.people, nexmark.in.flight.auctions, nexmark.person.id.lead,
//	nexmark.auction.id.lead, nexmark.hot.auction.ratio, nexmark.hot.bidder.ratio,
//	nexmark.hot.seller.ratio, nexmark.hot.channel.ratio, nexmark.num.categories,
//	nexmark.avg.person.byte.size, nexmark.avg.auction.byte.size,
//	nexmark.avg.bid.byte.size    the rules above (1000, 100, 10, 10, 2, 4, 4, 2, 5, 200, 500, 100)
//
// The package guards no storage invariant itself; it provides what I7
// needs from a source: regenerating from a checkpointed position yields
// exactly the rows that were not yet acknowledged.
package nexmark
