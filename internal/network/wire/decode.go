package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Decoder reads frames from a stream. One goroutine (the connection's
// reader) uses it.
//
// Next reads a frame's header and, for every type but BUFFER, its body,
// which the accessor of its type returns (Hello, PartitionRequest, Credits,
// CancelRequest, ErrorFrame). For a BUFFER, Next reads only the fixed header
// (Buffer): the caller picks the destination by channel and reads the
// payload into it with ReadPayload, straight from the stream (bufio reads a
// payload larger than its buffer directly from the underlying reader, so
// the bytes are copied once, into the receiver's pool buffer). A payload
// not read is skipped by the next call to Next.
//
// Bounds: a frame's length is checked against its type's bounds before
// anything is read into memory: a data payload against the receiver's
// buffer size, an event's against MaxEventSize, ids against MaxIDLen, an
// ERROR's text against MaxTextLen, ADD_CREDIT against MaxCredits. The only
// memory a Decoder allocates is one scratch body of at most the largest
// non-BUFFER frame it has read (at most 512 KiB), reused; decoding a BUFFER
// allocates nothing.
//
// Errors name the frame type, the field and the bound. A stream that ends
// cleanly between frames gives io.EOF; one that ends inside a frame gives
// an error wrapping io.ErrUnexpectedEOF; one whose read fails (a reset, a
// timeout), an error wrapping that cause. After an error the stream is out
// of step: the connection must be closed.
type Decoder struct {
	r         *bufio.Reader
	maxBuffer int

	hdr     [BufferHeaderSize]byte
	typ     Type
	pending int    // BUFFER payload bytes not yet read
	body    []byte // the last non-BUFFER body read; scratch, reused

	hello Hello
	req   PartitionRequest
	buf   BufferHeader
	ch    uint32
	errf  ErrorFrame
}

// NewDecoder returns a Decoder reading from r whose BUFFER data payloads
// may have up to maxBufferSize bytes: the receiver's network buffer size.
func NewDecoder(r *bufio.Reader, maxBufferSize int) (*Decoder, error) {
	if maxBufferSize < MinBufferSize || maxBufferSize > MaxBufferSize {
		return nil, fmt.Errorf("wire: a network buffer size of %d bytes, want %d to %d (weir.Config.BufferSize, weir run --buffer-size)", maxBufferSize, MinBufferSize, MaxBufferSize)
	}
	return &Decoder{r: r, maxBuffer: maxBufferSize}, nil
}

// ReadHello reads the first frame of a connection, which must be a HELLO.
// A peer whose first bytes are not a HELLO's (another protocol on the
// data port) is named as such before its length is believed.
func (d *Decoder) ReadHello() (Hello, error) {
	const prefix = HeaderSize + len(Magic) + 2 // through the version
	peek, _ := d.r.Peek(prefix)
	magic := peek[min(HeaderSize, len(peek)):min(HeaderSize+len(Magic), len(peek))]
	if len(peek) > 4 && Type(peek[4]) != TypeHello || string(magic) != Magic[:len(magic)] {
		return Hello{}, fmt.Errorf("wire: the peer is not a Weir TaskManager: its first bytes are %q, want a HELLO frame with magic %q", peek, Magic)
	}
	if len(peek) == prefix {
		if v := le.Uint16(peek[HeaderSize+len(Magic):]); v != Version {
			return Hello{}, decodeErr(TypeHello, "version", "the peer speaks wire version %d, this build speaks version %d (every process of a cluster must run the same build)", v, Version)
		}
	}
	t, err := d.Next()
	if err == io.EOF {
		err = fmt.Errorf("wire: reading HELLO: the stream ended before it: %w", io.ErrUnexpectedEOF)
	}
	if err != nil {
		return Hello{}, err
	}
	if t != TypeHello {
		return Hello{}, fmt.Errorf("wire: the first frame is %s, want HELLO", t)
	}
	return d.hello, nil
}

// Next reads the next frame and returns its type. It returns io.EOF when
// the stream ends between frames.
func (d *Decoder) Next() (Type, error) {
	d.typ = 0
	if d.pending > 0 {
		n := d.pending
		d.pending = 0
		if k, err := d.r.Discard(n); err != nil {
			return 0, d.truncated(TypeBuffer, "payload", n-k, err)
		}
	}
	if k, err := io.ReadFull(d.r, d.hdr[:HeaderSize]); err != nil {
		switch err {
		case io.EOF:
			return 0, io.EOF
		case io.ErrUnexpectedEOF:
			return 0, fmt.Errorf("wire: the stream ends inside a frame header, after %d of %d bytes: %w", k, HeaderSize, io.ErrUnexpectedEOF)
		}
		// A reset or a timeout: the caller names it by the cause.
		return 0, fmt.Errorf("wire: reading a frame header, after %d of %d bytes: %w", k, HeaderSize, err)
	}
	n, t := int64(le.Uint32(d.hdr[:])), Type(d.hdr[4])
	if t == TypeBuffer {
		if err := d.readBuffer(n); err != nil {
			return 0, err
		}
		return t, nil
	}
	lo, hi := bodyBounds(t)
	if hi < 0 {
		return 0, fmt.Errorf("wire: a frame of unknown %s with a %d-byte body (this build knows types %d to %d)", t, n, TypeHello, TypeError)
	}
	if n < lo || n > hi {
		return 0, lengthErr(t, n, lo, hi)
	}
	if int64(cap(d.body)) < n {
		d.body = make([]byte, n)
	}
	d.body = d.body[:n]
	if k, err := io.ReadFull(d.r, d.body); err != nil {
		return 0, d.truncated(t, "body", int(n)-k, err)
	}
	p := parser{b: d.body, t: t}
	switch t {
	case TypeHello:
		d.hello = p.hello()
	case TypePartitionRequest:
		d.req = p.request()
	case TypeAddCredit:
		p.credits()
	case TypeCancelRequest:
		d.ch = p.u32f("Channel")
	case TypeError:
		d.errf = ErrorFrame{Channel: p.u32f("Channel"), Text: p.text()}
	}
	if p.err == nil && p.off != len(p.b) {
		p.fail("", "%d bytes follow the last field", len(p.b)-p.off)
	}
	if p.err != nil {
		return 0, p.err
	}
	d.typ = t
	return t, nil
}

// bodyBounds is the least and most body bytes of a non-BUFFER frame of
// type t; hi < 0 for an unknown type.
func bodyBounds(t Type) (lo, hi int64) {
	switch t {
	case TypeHello:
		return helloFixed, helloMax
	case TypePartitionRequest:
		return requestFixed, requestMax
	case TypeAddCredit:
		return 4 + creditPair, creditsMax
	case TypeCancelRequest:
		return 4, 4
	case TypeError:
		return errorFixed, errorMax
	}
	return 0, -1
}

func (d *Decoder) readBuffer(n int64) error {
	if n < bufferFixed {
		return lengthErr(TypeBuffer, n, bufferFixed, bufferFixed+int64(d.maxBuffer))
	}
	if k, err := io.ReadFull(d.r, d.hdr[HeaderSize:]); err != nil {
		return d.truncated(TypeBuffer, "header", bufferFixed-k, err)
	}
	b := d.hdr[HeaderSize:]
	h := BufferHeader{Channel: le.Uint32(b), Sequence: le.Uint32(b[4:]), Backlog: le.Uint32(b[8:]),
		Kind: b[12], Priority: b[13]&flagPriority != 0}
	plen := n - bufferFixed // int64: a claimed length must not wrap an int
	switch {
	case h.Kind >= NumKinds:
		return decodeErr(TypeBuffer, "kind", "%d on channel %d, want below %d (NumKinds)", h.Kind, h.Channel, NumKinds)
	case b[13]&^flagPriority != 0:
		return decodeErr(TypeBuffer, "flags", "%#02x on channel %d: only the priority bit (%#02x) is defined", b[13], h.Channel, flagPriority)
	case h.Kind == KindData && h.Priority:
		return decodeErr(TypeBuffer, "flags", "priority on a data buffer of channel %d (only events overtake data)", h.Channel)
	case h.Kind == KindData && plen > int64(d.maxBuffer):
		return decodeErr(TypeBuffer, "payload", "%d bytes on channel %d, more than the receiver's %d-byte network buffers (weir.Config.BufferSize, weir run --buffer-size: every TaskManager of a cluster must use the same)", plen, h.Channel, d.maxBuffer)
	case h.Kind != KindData && plen > MaxEventSize:
		return decodeErr(TypeBuffer, "payload", "an event of kind %d with %d bytes on channel %d, more than the %d an event may have (MaxEventSize)", h.Kind, plen, h.Channel, MaxEventSize)
	}
	h.Len = int(plen)
	d.buf, d.pending, d.typ = h, h.Len, TypeBuffer
	return nil
}

// ReadPayload reads the payload of the BUFFER that Next returned into
// dst[:Buffer().Len] and returns that slice; dst must have the capacity.
// It reads straight from the stream into dst and allocates nothing.
func (d *Decoder) ReadPayload(dst []byte) ([]byte, error) {
	if d.typ != TypeBuffer {
		return dst[:0], errors.New("wire: ReadPayload without a BUFFER frame (call Next first)")
	}
	n := d.buf.Len
	if d.pending != n {
		return dst[:0], fmt.Errorf("wire: the payload of the BUFFER on channel %d was read already", d.buf.Channel)
	}
	if cap(dst) < n {
		return dst[:0], fmt.Errorf("wire: the payload of the BUFFER on channel %d has %d bytes, the buffer it is read into holds %d", d.buf.Channel, n, cap(dst))
	}
	d.pending = 0
	dst = dst[:n]
	if k, err := io.ReadFull(d.r, dst); err != nil {
		return dst[:k], d.truncated(TypeBuffer, "payload", n-k, err)
	}
	return dst, nil
}

// Hello is the HELLO that Next returned.
func (d *Decoder) Hello() Hello { return d.hello }

// PartitionRequest is the PARTITION_REQUEST that Next returned.
func (d *Decoder) PartitionRequest() PartitionRequest { return d.req }

// Buffer is the header of the BUFFER that Next returned.
func (d *Decoder) Buffer() BufferHeader { return d.buf }

// Credits is the ADD_CREDIT that Next returned, read in place: valid
// until the next call to Next. Empty when Next returned another type.
func (d *Decoder) Credits() Credits {
	if d.typ != TypeAddCredit {
		return Credits{}
	}
	return Credits{b: d.body[4:]}
}

// CancelRequest is the channel of the CANCEL_REQUEST that Next returned.
func (d *Decoder) CancelRequest() uint32 { return d.ch }

// ErrorFrame is the ERROR that Next returned.
func (d *Decoder) ErrorFrame() ErrorFrame { return d.errf }

// Credits are the (channel, credit) pairs of an ADD_CREDIT, read in place.
type Credits struct{ b []byte }

// Len is the number of pairs.
func (c Credits) Len() int { return len(c.b) / creditPair }

// At is pair i.
func (c Credits) At(i int) Credit {
	p := c.b[i*creditPair:]
	return Credit{Channel: le.Uint32(p), Credit: le.Uint32(p[4:])}
}

// AppendTo appends the pairs to dst.
func (c Credits) AppendTo(dst []Credit) []Credit {
	for i := range c.Len() {
		dst = append(dst, c.At(i))
	}
	return dst
}

func (d *Decoder) truncated(t Type, field string, missing int, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("wire: decoding %s: field %s: %d bytes missing: %w", t, field, missing, err)
}

func lengthErr(t Type, n, lo, hi int64) error {
	if n < lo {
		return decodeErr(t, "length", "%d bytes, fewer than the %d its fixed fields take", n, lo)
	}
	return decodeErr(t, "length", "%d bytes, more than the %d this frame may have", n, hi)
}

func decodeErr(t Type, field, format string, args ...any) error {
	return fmt.Errorf("wire: decoding %s: field %s: %s", t, field, fmt.Sprintf(format, args...))
}

// parser reads the fields of a body whose length has been checked against
// its type's bounds; every variable-length field is checked against the
// bytes left.
type parser struct {
	b   []byte
	off int
	t   Type
	err error
}

func (p *parser) fail(field, format string, args ...any) {
	if p.err == nil {
		if field == "" {
			p.err = fmt.Errorf("wire: decoding %s: %s", p.t, fmt.Sprintf(format, args...))
		} else {
			p.err = decodeErr(p.t, field, format, args...)
		}
	}
}

func (p *parser) take(field string, n int) []byte {
	if p.err != nil {
		return nil
	}
	if len(p.b)-p.off < n {
		p.fail(field, "%d bytes at byte %d of the body, which has %d left", n, p.off, len(p.b)-p.off)
		return nil
	}
	p.off += n
	return p.b[p.off-n : p.off]
}

func (p *parser) u32f(field string) uint32 {
	if b := p.take(field, 4); b != nil {
		return le.Uint32(b)
	}
	return 0
}

func (p *parser) id(field string) string {
	n := p.take(field, 1)
	if n == nil {
		return ""
	}
	return string(p.take(field, int(n[0])))
}

func (p *parser) text() string {
	n := p.take("text", 2)
	if n == nil {
		return ""
	}
	l := int(le.Uint16(n))
	if l > MaxTextLen {
		p.fail("text", "%d bytes, more than the %d an ERROR's text may have (MaxTextLen)", l, MaxTextLen)
		return ""
	}
	return string(p.take("text", l))
}

func (p *parser) hello() Hello {
	if m := p.take("magic", len(Magic)); m != nil && string(m) != Magic {
		p.fail("magic", "%q, want %q", m, Magic)
	}
	if v := p.take("version", 2); v != nil && le.Uint16(v) != Version {
		p.fail("version", "the peer speaks wire version %d, this build speaks version %d (every process of a cluster must run the same build)", le.Uint16(v), Version)
	}
	h := Hello{TaskManager: p.id("TaskManager"), Session: p.id("Session")}
	if e := p.take("Epoch", 8); e != nil {
		h.Epoch = le.Uint64(e)
	}
	h.BuildID = p.id("BuildID")
	return h
}

func (p *parser) request() PartitionRequest {
	r := PartitionRequest{Channel: p.u32f("Channel")}
	r.Key.Job = p.id("Key.Job")
	r.Key.Edge = int(p.u32f("Key.Edge"))
	r.Key.Producer = int(p.u32f("Key.Producer"))
	r.Key.Attempt = int(p.u32f("Key.Attempt"))
	r.Subpartition = p.u32f("Subpartition")
	r.Credit = p.u32f("Credit")
	return r
}

// credits checks an ADD_CREDIT's count against its length; the pairs are
// read in place (Decoder.Credits).
func (p *parser) credits() {
	n := p.u32f("count")
	if p.err != nil {
		return
	}
	if want := uint64(len(p.b)-4) / creditPair; uint64(n) != want || (len(p.b)-4)%creditPair != 0 {
		p.fail("count", "%d pairs in a body of %d bytes (4 + 8 per pair)", n, len(p.b))
		return
	}
	p.off = len(p.b)
}
