package query

import (
	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q22, URL directories: every bid with the first three directories of its
// URL.
//
//	SELECT
//	    auction, bidder, price, channel,
//	    SPLIT_INDEX(url, '/', 3) as dir1,
//	    SPLIT_INDEX(url, '/', 4) as dir2,
//	    SPLIT_INDEX(url, '/', 5) as dir3 FROM bid;
//
// One map chained to the source. Flink's SPLIT_INDEX(s, sep, i) is element i
// (from 0) of commons-lang's splitByWholeSeparatorPreserveAllTokens(s, sep),
// NULL when there are not that many: for a non-empty string, the pieces
// between separators, empty ones included (strings.Split's pieces); an
// empty string has no pieces. q22Split scans the URL once for the slashes
// and keeps the three pieces as substrings (no copy, no allocation).
func init() {
	register(Query{
		Name:    "q22",
		Columns: []string{"auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"},
		Build: func(in *Input) error {
			dirs := weir.Map(Bids(in.Events), func(b nexmark.Bid) q22Bid {
				r := q22Bid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel}
				r.N = q22Split(b.URL, &r.Dirs)
				return r
			}).Name("q22 directories")
			Emit(in, dirs, func(b q22Bid) Row {
				row := Row{b.Auction, b.Bidder, b.Price, b.Channel, nil, nil, nil}
				for i := range b.N {
					row[4+i] = b.Dirs[i]
				}
				return row
			})
			return nil
		},
	})
}

// q22Bid is a row of q22's result: Dirs[:N] are dir1, dir2, dir3; the
// others are NULL.
type q22Bid struct {
	Auction, Bidder, Price int64
	Channel                string
	Dirs                   [3]string
	N                      int
}

// q22Split sets dirs to pieces 3, 4 and 5 of url split at '/' (as far as
// there are), and returns how many it set. One pass over the bytes ('/'
// is never part of a multi-byte UTF-8 sequence); the pieces are short, so
// a plain loop beats strings.IndexByte's per-call setup.
func q22Split(url string, dirs *[3]string) int {
	if url == "" {
		return 0
	}
	piece, start := 0, 0
	for i := 0; i < len(url); i++ {
		if url[i] != '/' {
			continue
		}
		if piece >= 3 {
			dirs[piece-3] = url[start:i]
			if piece == 5 {
				return 3
			}
		}
		piece++
		start = i + 1
	}
	if piece < 3 {
		return 0
	}
	dirs[piece-3] = url[start:] // the last piece
	return piece - 2
}
