package nexmark

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/weirhq/weir/internal/jsonline"
)

// AppendJSON appends e as one JSON object and a newline: "type" first,
// then the fields of its type with Nexmark's names in Nexmark's order,
// times as epoch ms. It allocates nothing when dst has room.
func AppendJSON(dst []byte, e *Event) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, e.Type.String()...)
	dst = append(dst, '"')
	switch e.Type {
	case PersonEvent:
		p := &e.Person
		dst = appendInt(dst, "id", p.ID)
		dst = appendString(dst, "name", p.Name)
		dst = appendString(dst, "emailAddress", p.EmailAddress)
		dst = appendString(dst, "creditCard", p.CreditCard)
		dst = appendString(dst, "city", p.City)
		dst = appendString(dst, "state", p.State)
		dst = appendInt(dst, "dateTime", p.DateTime)
		dst = appendString(dst, "extra", p.Extra)
	case AuctionEvent:
		a := &e.Auction
		dst = appendInt(dst, "id", a.ID)
		dst = appendString(dst, "itemName", a.ItemName)
		dst = appendString(dst, "description", a.Description)
		dst = appendInt(dst, "initialBid", a.InitialBid)
		dst = appendInt(dst, "reserve", a.Reserve)
		dst = appendInt(dst, "dateTime", a.DateTime)
		dst = appendInt(dst, "expires", a.Expires)
		dst = appendInt(dst, "seller", a.Seller)
		dst = appendInt(dst, "category", a.Category)
		dst = appendString(dst, "extra", a.Extra)
	default:
		b := &e.Bid
		dst = appendInt(dst, "auction", b.Auction)
		dst = appendInt(dst, "bidder", b.Bidder)
		dst = appendInt(dst, "price", b.Price)
		dst = appendString(dst, "channel", b.Channel)
		dst = appendString(dst, "url", b.URL)
		dst = appendInt(dst, "dateTime", b.DateTime)
		dst = appendString(dst, "extra", b.Extra)
	}
	return append(dst, "}\n"...)
}

func appendInt(dst []byte, key string, v int64) []byte {
	dst = append(dst, `,"`...)
	dst = append(dst, key...)
	dst = append(dst, `":`...)
	return strconv.AppendInt(dst, v, 10)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 as U+FFFD (as encoding/json does), so
// the line is valid JSON whatever the string holds.
func appendString(dst []byte, key, s string) []byte {
	dst = append(dst, `,"`...)
	dst = append(dst, key...)
	dst = append(dst, `":"`...)
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}

// The keys of each type's object, after "type", in AppendJSON's order.
var (
	personKeys  = []string{"id", "name", "emailAddress", "creditCard", "city", "state", "dateTime", "extra"}
	auctionKeys = []string{"id", "itemName", "description", "initialBid", "reserve", "dateTime", "expires", "seller", "category", "extra"}
	bidKeys     = []string{"auction", "bidder", "price", "channel", "url", "dateTime", "extra"}
)

// maxLine bounds a line the Decoder reads (Nexmark's events are a few
// hundred bytes; this leaves room for large configured sizes).
const maxLine = 4 << 20

// Decoder reads the JSON lines AppendJSON writes (`weir nexmark generate`),
// strictly: each line one object with "type" and exactly the keys of that
// type, numbers as integers, strings as strings. Errors name the line.
type Decoder struct {
	sc   *bufio.Scanner
	line int
}

// NewDecoder returns a decoder reading r.
func NewDecoder(r io.Reader) *Decoder {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return &Decoder{sc: sc}
}

// Line is the number of the line last read (from 1).
func (d *Decoder) Line() int { return d.line }

// Next reads the next event into e; io.EOF after the last one. Blank lines
// are errors (a generated file has none).
func (d *Decoder) Next(e *Event) error {
	if !d.sc.Scan() {
		if err := d.sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return fmt.Errorf("line %d: longer than %d bytes", d.line+1, maxLine)
			}
			return fmt.Errorf("after line %d: %w", d.line, err)
		}
		return io.EOF
	}
	d.line++
	if err := DecodeLine(d.sc.Text(), e); err != nil {
		return fmt.Errorf("line %d: %w", d.line, err)
	}
	return nil
}

// DecodeLine parses one JSON line of an event into e.
func DecodeLine(text string, e *Event) error {
	if !utf8.ValidString(text) {
		// encoding/json lets invalid bytes through inside strings; they would
		// not survive being written again, so the line is refused.
		i := 0
		for i < len(text) {
			r, n := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("not valid UTF-8 (byte %d is %#x)", i+1, text[i])
	}
	vals, err := jsonline.Object(text, "Nexmark event", "type")
	if err != nil {
		return err
	}
	typ, err := jsonline.String("type", vals[0])
	if err != nil {
		return err
	}
	var keys []string
	switch typ {
	case "person":
		keys = personKeys
	case "auction":
		keys = auctionKeys
	case "bid":
		keys = bidKeys
	default:
		return fmt.Errorf(`"type" must be "person", "auction" or "bid", got %.40q`, typ)
	}
	if vals, err = jsonline.Object(text, typ, keys...); err != nil {
		return err
	}
	if err := extraKeys(text, typ, keys); err != nil {
		return err
	}
	d := fieldDecoder{vals: vals}
	switch typ {
	case "person":
		*e = Event{Type: PersonEvent}
		p := &e.Person
		d.int("id", &p.ID)
		d.str("name", &p.Name)
		d.str("emailAddress", &p.EmailAddress)
		d.str("creditCard", &p.CreditCard)
		d.str("city", &p.City)
		d.str("state", &p.State)
		d.ms("dateTime", &p.DateTime)
		d.str("extra", &p.Extra)
	case "auction":
		*e = Event{Type: AuctionEvent}
		a := &e.Auction
		d.int("id", &a.ID)
		d.str("itemName", &a.ItemName)
		d.str("description", &a.Description)
		d.int("initialBid", &a.InitialBid)
		d.int("reserve", &a.Reserve)
		d.ms("dateTime", &a.DateTime)
		d.ms("expires", &a.Expires)
		d.int("seller", &a.Seller)
		d.int("category", &a.Category)
		d.str("extra", &a.Extra)
	default:
		*e = Event{Type: BidEvent}
		b := &e.Bid
		d.int("auction", &b.Auction)
		d.int("bidder", &b.Bidder)
		d.int("price", &b.Price)
		d.str("channel", &b.Channel)
		d.str("url", &b.URL)
		d.ms("dateTime", &b.DateTime)
		d.str("extra", &b.Extra)
	}
	if d.err != nil {
		*e = Event{}
	}
	return d.err
}

// extraKeys reports a key the type does not have (a misspelt key would
// otherwise be reported as a missing one only).
func extraKeys(text, typ string, keys []string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return err // jsonline.Object accepted it; not expected
	}
	if len(m) == len(keys)+1 {
		return nil
	}
	var unknown []string
	for k := range m {
		if k != "type" && !slices.Contains(keys, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	if len(unknown) == 0 {
		return nil
	}
	return fmt.Errorf("a %s has no key %.60q (its keys: %q)", typ, unknown[0], keys)
}

// fieldDecoder converts the values of one object in key order, keeping
// the first error.
type fieldDecoder struct {
	vals []string
	i    int
	err  error
}

func (d *fieldDecoder) next() string { v := d.vals[d.i]; d.i++; return v }

func (d *fieldDecoder) int(key string, dst *int64) {
	v := d.next()
	if d.err == nil {
		*dst, d.err = jsonline.Int(key, v, "")
	}
}

func (d *fieldDecoder) ms(key string, dst *int64) {
	v := d.next()
	if d.err == nil {
		*dst, d.err = jsonline.Int(key, v, "milliseconds")
	}
}

func (d *fieldDecoder) str(key string, dst *string) {
	v := d.next()
	if d.err == nil {
		*dst, d.err = jsonline.String(key, v)
	}
}
