package query

import (
	"strings"
	"unicode/utf8"

	"github.com/weirhq/weir"
	"github.com/weirhq/weir/nexmark"
)

// q21, add a channel id: the bids of the four hot channels with their
// fixed ids, and the other bids whose URL carries a channel_id parameter,
// with its value.
//
//	SELECT
//	    auction, bidder, price, channel,
//	    CASE
//	        WHEN lower(channel) = 'apple' THEN '0'
//	        WHEN lower(channel) = 'google' THEN '1'
//	        WHEN lower(channel) = 'facebook' THEN '2'
//	        WHEN lower(channel) = 'baidu' THEN '3'
//	        ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
//	        END
//	    AS channel_id FROM bid
//	    where REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) is not null or
//	          lower(channel) in ('apple', 'google', 'facebook', 'baidu');
//
// One flat map chained to the source, without a regular expression engine:
// q21HotID compares the lower-cased channel with the four names without
// building the lower-cased string (qaLowerIs: Java's toLowerCase), and
// q21Extract is what Flink's REGEXP_EXTRACT (java.util.regex, Matcher.find,
// group 2) gives for this pattern: the leftmost match starts either at the
// start of the URL, if it begins with "channel_id=", or at the first
// "&channel_id=", and group 2 runs to the next '&' or the end (possibly
// empty, which is not NULL). The WHERE's extraction is skipped for the hot
// channels, which pass anyway.
func init() {
	register(Query{
		Name:    "q21",
		Columns: []string{"auction", "bidder", "price", "channel", "channel_id"},
		Build: func(in *Input) error {
			ids := weir.FlatMap(Bids(in.Events), func(b nexmark.Bid, out weir.Collector[q21Bid]) {
				id, ok := q21HotID(b.Channel)
				if !ok {
					id, ok = q21Extract(b.URL)
				}
				if ok {
					out.Collect(q21Bid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, ChannelID: id})
				}
			}).Name("q21 channel ids")
			Emit(in, ids, func(b q21Bid) Row { return Row{b.Auction, b.Bidder, b.Price, b.Channel, b.ChannelID} })
			return nil
		},
	})
}

// q21Bid is a row of q21's result.
type q21Bid struct {
	Auction, Bidder, Price int64
	Channel, ChannelID     string
}

// q21HotID is the CASE's id of a hot channel: lower(channel) is apple,
// google, facebook or baidu.
func q21HotID(channel string) (string, bool) {
	if channel == "" {
		return "", false
	}
	// The first byte rules out most channels ("channel-123") at once.
	switch c := channel[0] | 0x20; {
	case channel[0] >= utf8.RuneSelf: // a non-ASCII first rune: try them all
	case c == 'a':
		if qaLowerIs(channel, "apple") {
			return "0", true
		}
		return "", false
	case c == 'g':
		if qaLowerIs(channel, "google") {
			return "1", true
		}
		return "", false
	case c == 'f':
		if qaLowerIs(channel, "facebook") {
			return "2", true
		}
		return "", false
	case c == 'b':
		if qaLowerIs(channel, "baidu") {
			return "3", true
		}
		return "", false
	default:
		return "", false
	}
	for i, name := range [...]string{"apple", "google", "facebook", "baidu"} {
		if qaLowerIs(channel, name) {
			return [...]string{"0", "1", "2", "3"}[i], true
		}
	}
	return "", false
}

// q21Extract is REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2): the
// value of the first channel_id parameter that starts the URL or follows
// an '&'; false (NULL) when there is none.
func q21Extract(url string) (string, bool) {
	const param = "channel_id="
	var start int
	if strings.HasPrefix(url, param) {
		start = len(param)
	} else if i := strings.Index(url, "&"+param); i >= 0 {
		start = i + 1 + len(param)
	} else {
		return "", false
	}
	v := url[start:]
	if end := strings.IndexByte(v, '&'); end >= 0 {
		v = v[:end]
	}
	return v, true
}
