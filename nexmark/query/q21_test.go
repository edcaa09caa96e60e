package query_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/weirhq/weir/nexmark"
	"github.com/weirhq/weir/nexmark/query"
)

func TestQ21(t *testing.T) {
	cfg := testConfig(t)
	// Go's regexp is leftmost-first like java.util.regex, and this pattern
	// uses nothing where the two differ.
	re := regexp.MustCompile(`(&|^)channel_id=([^&]*)`)
	hot := map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
	var want []query.Row
	withID, hotBids := 0, 0
	for _, e := range testEvents(t, cfg) {
		if e.Type != nexmark.BidEvent {
			continue
		}
		b := e.Bid
		var extracted any // NULL unless the pattern matches
		if m := re.FindStringSubmatch(b.URL); m != nil {
			extracted = m[2]
		}
		id, isHot := hot[strings.ToLower(b.Channel)]
		switch {
		case isHot:
			hotBids++
			want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.Channel, id})
		case extracted != nil:
			withID++
			want = append(want, query.Row{b.Auction, b.Bidder, b.Price, b.Channel, extracted})
		}
	}
	if withID == 0 || hotBids == 0 {
		t.Fatalf("%d bids of hot channels, %d with a channel_id: the test needs both", hotBids, withID)
	}
	checkQuery(t, "q21", cfg, want)
}
