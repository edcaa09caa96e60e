package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// frame is any one frame, for tests: T says which fields hold it.
type frame struct {
	T       Type
	Hello   Hello
	Req     PartitionRequest
	Buf     BufferHeader
	Payload []byte
	Credits []Credit
	Channel uint32
	Err     ErrorFrame
}

func (f frame) String() string {
	switch f.T {
	case TypeHello:
		return fmt.Sprintf("HELLO %+v", f.Hello)
	case TypePartitionRequest:
		return fmt.Sprintf("PARTITION_REQUEST %+v", f.Req)
	case TypeBuffer:
		return fmt.Sprintf("BUFFER %+v payload %q", f.Buf, f.Payload)
	case TypeAddCredit:
		return fmt.Sprintf("ADD_CREDIT %+v", f.Credits)
	case TypeCancelRequest:
		return fmt.Sprintf("CANCEL_REQUEST channel %d", f.Channel)
	case TypeError:
		return fmt.Sprintf("ERROR %+v", f.Err)
	}
	return f.T.String()
}

// appendFrame appends f's encoding.
func appendFrame(dst []byte, f frame) ([]byte, error) {
	switch f.T {
	case TypeHello:
		return AppendHello(dst, f.Hello)
	case TypePartitionRequest:
		return AppendPartitionRequest(dst, f.Req)
	case TypeBuffer:
		return AppendBuffer(dst, f.Buf, f.Payload)
	case TypeAddCredit:
		return AppendAddCredit(dst, f.Credits)
	case TypeCancelRequest:
		return AppendCancelRequest(dst, f.Channel), nil
	case TypeError:
		return AppendError(dst, f.Err), nil
	}
	return dst, fmt.Errorf("no frame type %d", f.T)
}

// next decodes one frame with d, reading a BUFFER's payload into a fresh
// buffer of maxBuf bytes.
func next(d *Decoder, maxBuf int) (frame, error) {
	t, err := d.Next()
	if err != nil {
		return frame{}, err
	}
	f := frame{T: t}
	switch t {
	case TypeHello:
		f.Hello = d.Hello()
	case TypePartitionRequest:
		f.Req = d.PartitionRequest()
	case TypeBuffer:
		f.Buf = d.Buffer()
		if f.Payload, err = d.ReadPayload(make([]byte, 0, maxBuf)); err != nil {
			return frame{}, err
		}
	case TypeAddCredit:
		f.Credits = d.Credits().AppendTo(nil)
	case TypeCancelRequest:
		f.Channel = d.CancelRequest()
	case TypeError:
		f.Err = d.ErrorFrame()
	}
	return f, nil
}

func decodeAll(t testing.TB, b []byte, maxBuf int) ([]frame, error) {
	t.Helper()
	d, err := NewDecoder(bufio.NewReader(bytes.NewReader(b)), maxBuf)
	if err != nil {
		t.Fatal(err)
	}
	var out []frame
	for {
		f, err := next(d, maxBuf)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

// goldenFrames are one or more frames of each type, the content of
// testdata/*.hex.
var goldenFrames = []struct {
	name string
	f    frame
}{
	{"hello", frame{T: TypeHello, Hello: Hello{TaskManager: "tm-1", Session: "s-7f3a", Epoch: 1, BuildID: "v1.2.3+0123abcd"}}},
	{"hello_empty", frame{T: TypeHello}},
	{"partition_request", frame{T: TypePartitionRequest, Req: PartitionRequest{Channel: 5,
		Key: PartitionKey{Job: "0123456789abcdef0123456789abcdef", Edge: 2, Producer: 3, Attempt: 1}, Subpartition: 4, Credit: 2}}},
	{"buffer_data", frame{T: TypeBuffer, Buf: BufferHeader{Channel: 1, Sequence: 41, Backlog: 3, Kind: KindData, Len: 13},
		Payload: []byte{0x12, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', ' ', 'w', 'i', 'r'}}},
	{"buffer_watermark", frame{T: TypeBuffer, Buf: BufferHeader{Channel: 2, Sequence: 7, Kind: 1, Len: 8},
		Payload: []byte{0xe8, 0x03, 0, 0, 0, 0, 0, 0}}},
	{"buffer_priority_barrier", frame{T: TypeBuffer, Buf: BufferHeader{Channel: 0, Sequence: 0xfffffffe, Backlog: 9, Kind: 3, Priority: true, Len: 26},
		Payload: []byte{9, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x42, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}}},
	{"buffer_end_of_partition", frame{T: TypeBuffer, Buf: BufferHeader{Channel: 3, Sequence: 100, Kind: 2}, Payload: []byte{}}},
	{"add_credit", frame{T: TypeAddCredit, Credits: []Credit{{Channel: 0, Credit: 2}, {Channel: 7, Credit: 1}, {Channel: 65536, Credit: 10}}}},
	{"cancel_request", frame{T: TypeCancelRequest, Channel: 9}},
	{"error_channel", frame{T: TypeError, Err: ErrorFrame{Channel: 4, Text: "task map (2/4) failed: boom"}}},
	{"error_all", frame{T: TypeError, Err: ErrorFrame{Channel: AllChannels, Text: "HELLO: build \"a\", this TaskManager runs build \"b\""}}},
}

func TestRoundTripEveryFrame(t *testing.T) {
	for _, g := range goldenFrames {
		t.Run(g.name, func(t *testing.T) {
			b, err := appendFrame([]byte("prefix"), g.f)
			if err != nil {
				t.Fatal(err)
			}
			if string(b[:6]) != "prefix" {
				t.Fatalf("the encoder changed the bytes before it: %q", b[:6])
			}
			got, err := decodeAll(t, b[6:], 1024)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !reflect.DeepEqual(got[0], g.f) {
				t.Fatalf("decoded %v, want %v", got, g.f)
			}
		})
	}
}

// TestHandAssembled checks the encoder against frames assembled byte by
// byte from the layout in frame.go, an independent reference.
func TestHandAssembled(t *testing.T) {
	cases := []struct {
		name string
		f    frame
		want []byte
	}{
		{"BUFFER", frame{T: TypeBuffer, Buf: BufferHeader{Channel: 0x01020304, Sequence: 5, Backlog: 6, Kind: 3, Priority: true}, Payload: []byte("xy")},
			[]byte{16, 0, 0, 0, 3, 4, 3, 2, 1, 5, 0, 0, 0, 6, 0, 0, 0, 3, 1, 'x', 'y'}},
		{"ADD_CREDIT", frame{T: TypeAddCredit, Credits: []Credit{{1, 2}}},
			[]byte{12, 0, 0, 0, 4, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0}},
		{"CANCEL_REQUEST", frame{T: TypeCancelRequest, Channel: 258}, []byte{4, 0, 0, 0, 5, 2, 1, 0, 0}},
		{"ERROR", frame{T: TypeError, Err: ErrorFrame{Channel: AllChannels, Text: "no"}},
			[]byte{8, 0, 0, 0, 6, 0xff, 0xff, 0xff, 0xff, 2, 0, 'n', 'o'}},
		{"HELLO", frame{T: TypeHello, Hello: Hello{TaskManager: "a", Session: "", Epoch: 2, BuildID: "b"}},
			[]byte{19, 0, 0, 0, 1, 'W', 'E', 'I', 'R', 1, 0, 1, 'a', 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 'b'}},
		{"PARTITION_REQUEST", frame{T: TypePartitionRequest, Req: PartitionRequest{Channel: 1, Key: PartitionKey{Job: "j", Edge: 2, Producer: 3, Attempt: 4}, Subpartition: 5, Credit: 6}},
			[]byte{26, 0, 0, 0, 2, 1, 0, 0, 0, 1, 'j', 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0}},
	}
	for _, c := range cases {
		got, err := appendFrame(nil, c.f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s encodes to\n% x\nwant\n% x", c.name, got, c.want)
		}
	}
	if h, _ := AppendBufferHeader(nil, BufferHeader{}, 32<<10); len(h) != BufferHeaderSize || BufferHeaderSize != 19 {
		t.Errorf("a BUFFER header takes %d bytes (BufferHeaderSize %d), the design record says 19", len(h), BufferHeaderSize)
	}
}

func TestAppendBufferVec(t *testing.T) {
	payload := bytes.Repeat([]byte("abc"), 100)
	var vec [][]byte
	hdrs := make([]byte, 0, BufferHeaderSize) // room for one header: the second grows it
	var want []byte
	for i, h := range []BufferHeader{{Channel: 1, Sequence: 0}, {Channel: 2, Sequence: 1, Backlog: 4}, {Channel: 2, Sequence: 2, Kind: 2}} {
		p := payload
		if h.Kind != KindData {
			p = nil
		}
		var err error
		if vec, hdrs, err = AppendBufferVec(vec, hdrs, h, p); err != nil {
			t.Fatal(err)
		}
		if want, err = AppendBuffer(want, h, p); err != nil {
			t.Fatal(err)
		}
		if i == 0 && &vec[1][0] != &payload[0] {
			t.Fatal("AppendBufferVec copied the payload")
		}
	}
	if got := bytes.Join(vec, nil); !bytes.Equal(got, want) {
		t.Fatalf("the gather list holds\n% x\nwant\n% x", got, want)
	}
	if len(vec) != 5 {
		t.Fatalf("%d slices, want 5 (header and payload twice, an event's header alone)", len(vec))
	}
	if v2, h2, err := AppendBufferVec(vec, hdrs, BufferHeader{Kind: NumKinds}, nil); err == nil || len(v2) != len(vec) || len(h2) != len(hdrs) {
		t.Fatalf("a bad header gave %v and changed the lists (%d, %d)", err, len(v2), len(h2))
	}
}

func TestEncodeErrors(t *testing.T) {
	long := strings.Repeat("x", MaxIDLen+1)
	cases := []struct {
		f    frame
		want string
	}{
		{frame{T: TypeHello, Hello: Hello{TaskManager: long}}, "encoding HELLO: field TaskManager: 256 bytes, more than the 255"},
		{frame{T: TypeHello, Hello: Hello{BuildID: long}}, "field BuildID"},
		{frame{T: TypePartitionRequest, Req: PartitionRequest{Key: PartitionKey{Job: long}}}, "PARTITION_REQUEST: field Key.Job"},
		{frame{T: TypePartitionRequest, Req: PartitionRequest{Key: PartitionKey{Attempt: -1}}}, "field Key.Attempt: -1 is outside 0 to 4294967295"},
		{frame{T: TypePartitionRequest, Req: PartitionRequest{Key: PartitionKey{Edge: 1 << 32}}}, "field Key.Edge"},
		{frame{T: TypeBuffer, Buf: BufferHeader{Kind: NumKinds}}, "BUFFER: field kind: 7, want below 7"},
		{frame{T: TypeBuffer, Buf: BufferHeader{Priority: true}}, "field flags: priority on a data buffer"},
		{frame{T: TypeBuffer, Buf: BufferHeader{Kind: 3}, Payload: make([]byte, MaxEventSize+1)}, "more than the 256 an event may have"},
		{frame{T: TypeBuffer, Payload: make([]byte, MaxBufferSize+1)}, "more than the 67108864 a network buffer may have"},
		{frame{T: TypeAddCredit}, "ADD_CREDIT: field count: 0 pairs"},
		{frame{T: TypeAddCredit, Credits: make([]Credit, MaxCredits+1)}, "65537 pairs"},
	}
	for _, c := range cases {
		b, err := appendFrame([]byte("x"), c.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.f, err, c.want)
		}
		if string(b) != "x" {
			t.Errorf("%v: dst changed to %q on error", c.f, b)
		}
	}
}

func TestErrorTextIsCut(t *testing.T) {
	text := strings.Repeat("é", MaxTextLen) // 2 bytes each
	got, err := decodeAll(t, AppendError(nil, ErrorFrame{Channel: 1, Text: text}), 1024)
	if err != nil {
		t.Fatal(err)
	}
	g := got[0].Err.Text
	if len(g) > MaxTextLen || !strings.HasSuffix(g, "...") || !strings.HasPrefix(text, strings.TrimSuffix(g, "...")) {
		t.Fatalf("cut to %d bytes ending %q", len(g), g[len(g)-8:])
	}
	if !strings.HasSuffix(strings.TrimSuffix(g, "..."), "é") {
		t.Fatalf("cut inside a character: %q", g[len(g)-8:])
	}
	exact := strings.Repeat("a", MaxTextLen)
	if got, _ := decodeAll(t, AppendError(nil, ErrorFrame{Text: exact}), 1024); got[0].Err.Text != exact {
		t.Fatal("a text of exactly MaxTextLen was changed")
	}
}

// enc encodes f or fails the test.
func enc(t testing.TB, f frame) []byte {
	t.Helper()
	b, err := appendFrame(nil, f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// patch returns a copy of b with the bytes at off replaced.
func patch(b []byte, off int, with ...byte) []byte {
	c := bytes.Clone(b)
	copy(c[off:], with)
	return c
}

func u32(v uint32) []byte { return le.AppendUint32(nil, v) }

func TestDecodeErrors(t *testing.T) {
	const maxBuf = 1024
	hello := enc(t, goldenFrames[0].f)
	req := enc(t, goldenFrames[2].f)
	data := enc(t, frame{T: TypeBuffer, Buf: BufferHeader{Channel: 6}, Payload: make([]byte, 100)})
	credit := enc(t, frame{T: TypeAddCredit, Credits: []Credit{{1, 1}, {2, 2}}})
	cancel := enc(t, frame{T: TypeCancelRequest, Channel: 3})
	errf := enc(t, frame{T: TypeError, Err: ErrorFrame{Text: "abc"}})
	ev := enc(t, frame{T: TypeBuffer, Buf: BufferHeader{Channel: 2, Kind: 1}, Payload: make([]byte, MaxEventSize)})
	le.PutUint32(ev, uint32(bufferFixed+MaxEventSize+1)) // one byte more than an event may have
	cases := []struct {
		name string
		in   []byte
		want string
		eof  bool // wraps io.ErrUnexpectedEOF
	}{
		{"header cut", data[:3], "ends inside a frame header, after 3 of 5 bytes", true},
		{"BUFFER header cut", data[:10], "decoding BUFFER: field header: 9 bytes missing", true},
		{"BUFFER payload cut", data[:len(data)-1], "decoding BUFFER: field payload: 1 bytes missing", true},
		{"HELLO cut", hello[:len(hello)-2], "decoding HELLO: field body: 2 bytes missing", true},
		{"PARTITION_REQUEST cut", req[:9], "decoding PARTITION_REQUEST: field body", true},
		{"ADD_CREDIT cut", credit[:len(credit)-1], "decoding ADD_CREDIT: field body: 1 bytes missing", true},
		{"ERROR cut", errf[:7], "decoding ERROR: field body", true},
		{"unknown type", patch(cancel, 4, 9), "a frame of unknown type(9) with a 4-byte body (this build knows types 1 to 6)", false},
		{"type zero", patch(cancel, 4, 0), "unknown type(0)", false},
		{"garbage", []byte("GET / HTTP/1.1\r\n\r\n"), "unknown type(47) with a 542393671-byte body", false},
		{"data too large", patch(enc(t, frame{T: TypeBuffer, Payload: make([]byte, maxBuf+1)}), 0),
			"decoding BUFFER: field payload: 1025 bytes on channel 0, more than the receiver's 1024-byte network buffers (weir.Config.BufferSize, weir run --buffer-size", false},
		{"huge length, no bytes", append(u32(0xffffffff), byte(TypeBuffer)), "field header: 14 bytes missing", true},
		{"huge data length", append(append(u32(0xfffffff0), byte(TypeBuffer)), make([]byte, 14)...), "4294967266 bytes on channel 0, more than the receiver's 1024", false},
		{"event too large", append(ev, 0), "decoding BUFFER: field payload: an event of kind 1 with 257 bytes on channel 2, more than the 256 an event may have (MaxEventSize)", false},
		{"BUFFER shorter than its header", patch(data, 0, 13, 0, 0, 0), "decoding BUFFER: field length: 13 bytes, fewer than the 14", false},
		{"kind", patch(data, 17, NumKinds), "decoding BUFFER: field kind: 7 on channel 6, want below 7 (NumKinds)", false},
		{"unknown flag", patch(data, 18, 2), "decoding BUFFER: field flags: 0x02 on channel 6: only the priority bit (0x01) is defined", false},
		{"priority data", patch(data, 18, 1), "field flags: priority on a data buffer of channel 6", false},
		{"HELLO too long", patch(hello, 0, 0xff, 0xff), "decoding HELLO: field length: 65535 bytes, more than the 782 this frame may have", false},
		{"HELLO too short", append(u32(3), byte(TypeHello), 'W', 'E', 'I'), "decoding HELLO: field length: 3 bytes, fewer than the 17", false},
		{"HELLO magic", patch(hello, 5, 'X'), `decoding HELLO: field magic: "XEIR", want "WEIR"`, false},
		{"HELLO version", patch(hello, 9, 2), "decoding HELLO: field version: the peer speaks wire version 2, this build speaks version 1", false},
		{"HELLO id past the body", patch(hello, 11, 200), "decoding HELLO: field TaskManager: 200 bytes at byte 7 of the body, which has 35 left", false},
		{"PARTITION_REQUEST job past the body", patch(req, 9, 255), "decoding PARTITION_REQUEST: field Key.Job: 255 bytes", false},
		{"PARTITION_REQUEST trailing bytes", append(patch(req, 0, req[0]+1), 0), "decoding PARTITION_REQUEST: 1 bytes follow the last field", false},
		{"ADD_CREDIT count", patch(credit, 5, 3), "decoding ADD_CREDIT: field count: 3 pairs in a body of 20 bytes", false},
		{"ADD_CREDIT empty", append(u32(4), byte(TypeAddCredit), 0, 0, 0, 0), "decoding ADD_CREDIT: field length: 4 bytes, fewer than the 12", false},
		{"ADD_CREDIT too long", patch(credit, 0, 0xff, 0xff, 0xff), "decoding ADD_CREDIT: field length: 16777215 bytes, more than the 524292", false},
		{"ADD_CREDIT odd length", append(patch(credit, 0, 21), 0), "field count: 2 pairs in a body of 21 bytes", false},
		{"CANCEL_REQUEST length", append(patch(cancel, 0, 5), 0), "decoding CANCEL_REQUEST: field length: 5 bytes, more than the 4", false},
		{"ERROR text past the body", patch(errf, 9, 9), "decoding ERROR: field text: 9 bytes at byte 6 of the body, which has 3 left", false},
		{"ERROR text too long", append(append(u32(6+MaxTextLen+1), byte(TypeError)), append(u32(0), le.AppendUint16(nil, MaxTextLen+1)...)...),
			"decoding ERROR: field length: 8199 bytes, more than the 8198", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decodeAll(t, c.in, maxBuf)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("decoded %v with error %v, want an error containing %q", got, err, c.want)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) != c.eof {
				t.Fatalf("error %v: wraps io.ErrUnexpectedEOF %v, want %v", err, !c.eof, c.eof)
			}
			if !strings.HasPrefix(err.Error(), "wire: ") {
				t.Fatalf("error %q does not name the package", err)
			}
		})
	}
}

func TestDecodeCleanEOF(t *testing.T) {
	d, _ := NewDecoder(bufio.NewReader(bytes.NewReader(enc(t, goldenFrames[8].f))), 1024)
	if _, err := d.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Next(); err != io.EOF {
		t.Fatalf("the end of the stream between frames gave %v, want io.EOF", err)
	}
}

func TestNewDecoderBounds(t *testing.T) {
	for _, n := range []int{MinBufferSize - 1, MaxBufferSize + 1} {
		if _, err := NewDecoder(bufio.NewReader(nil), n); err == nil || !strings.Contains(err.Error(), "--buffer-size") {
			t.Errorf("buffer size %d: error %v, want one naming --buffer-size", n, err)
		}
	}
}

func TestReadHello(t *testing.T) {
	hello := enc(t, goldenFrames[0].f)
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"http", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), `the peer is not a Weir TaskManager: its first bytes are "GET / HTTP/"`},
		{"another frame first", enc(t, goldenFrames[8].f), "the peer is not a Weir TaskManager"},
		{"wrong magic", patch(hello, 6, 'X'), "not a Weir TaskManager"},
		{"newer version, longer", patch(hello, 0, 0xff, 0xff, 0, 0), "decoding HELLO: field version: the peer speaks wire version 2"},
		{"nothing", nil, "reading HELLO: the stream ended before it: unexpected EOF"},
		{"cut", hello[:7], "decoding HELLO: field body"},
	}
	cases[3].in = patch(cases[3].in, 9, 2)
	for _, c := range cases {
		d, _ := NewDecoder(bufio.NewReader(bytes.NewReader(c.in)), 1024)
		if _, err := d.ReadHello(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	d, _ := NewDecoder(bufio.NewReader(bytes.NewReader(hello)), 1024)
	if h, err := d.ReadHello(); err != nil || h != goldenFrames[0].f.Hello {
		t.Fatalf("ReadHello gave %+v, %v", h, err)
	}
}

func TestHelloCheck(t *testing.T) {
	want := Hello{TaskManager: "me", Session: "s1", Epoch: 1, BuildID: "b1"}
	ok := Hello{TaskManager: "peer", Session: "s1", Epoch: 1, BuildID: "b1"}
	if err := ok.Check(want); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		h    Hello
		want string
	}{
		{Hello{TaskManager: "peer", Session: "s1", Epoch: 1, BuildID: "b2"}, `HELLO from TaskManager "peer": build "b2", this TaskManager runs build "b1"`},
		{Hello{TaskManager: "peer", Session: "s1", Epoch: 2, BuildID: "b1"}, "leader epoch 2, this TaskManager is at epoch 1"},
		{Hello{TaskManager: "peer", Session: "s0", Epoch: 1, BuildID: "b1"}, `session "s0", this TaskManager expects session "s1"`},
	} {
		if err := c.h.Check(want); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.h, err, c.want)
		}
	}
}

// TestPayloadHandling covers ReadPayload's misuse and a payload the
// caller skips.
func TestPayloadHandling(t *testing.T) {
	b := enc(t, frame{T: TypeBuffer, Buf: BufferHeader{Channel: 1}, Payload: []byte("0123456789")})
	b = append(b, enc(t, goldenFrames[8].f)...)
	d, _ := NewDecoder(bufio.NewReader(bytes.NewReader(b)), 1024)
	if _, err := d.ReadPayload(make([]byte, 0, 64)); err == nil {
		t.Fatal("ReadPayload before Next succeeded")
	}
	if c := d.Credits(); c.Len() != 0 {
		t.Fatalf("Credits before any ADD_CREDIT has %d pairs", c.Len())
	}
	if _, err := d.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadPayload(make([]byte, 0, 9)); err == nil || !strings.Contains(err.Error(), "has 10 bytes, the buffer it is read into holds 9") {
		t.Fatalf("a small buffer gave %v", err)
	}
	// Skipped: the next frame is still found.
	if ty, err := d.Next(); err != nil || ty != TypeCancelRequest || d.CancelRequest() != 9 {
		t.Fatalf("after a skipped payload: %v %v %d", ty, err, d.CancelRequest())
	}
	d, _ = NewDecoder(bufio.NewReader(bytes.NewReader(b)), 1024)
	_, _ = d.Next()
	if p, err := d.ReadPayload(make([]byte, 0, 10)); err != nil || string(p) != "0123456789" {
		t.Fatalf("payload %q, %v", p, err)
	}
	if _, err := d.ReadPayload(make([]byte, 0, 10)); err == nil || !strings.Contains(err.Error(), "read already") {
		t.Fatalf("a second ReadPayload gave %v", err)
	}
}

func TestSequence(t *testing.T) {
	var send, recv Sequence
	for range 3 {
		if err := recv.Check(4, send.Take()); err != nil {
			t.Fatal(err)
		}
	}
	if err := recv.Check(4, 5); err == nil || err.Error() != "wire: BUFFER on channel 4: sequence 5, expected 3: a gap of 2 buffers" {
		t.Fatalf("gap: %v", err)
	}
	if err := recv.Check(4, 2); err == nil || err.Error() != "wire: BUFFER on channel 4: sequence 2, expected 3: a repeat of a buffer 1 back" {
		t.Fatalf("repeat: %v", err)
	}
	if recv.Next() != 3 {
		t.Fatalf("an error moved the sequence to %d", recv.Next())
	}
	// Wrapping at 2^32 is no gap.
	send, recv = Sequence{next: 0xffffffff}, Sequence{next: 0xffffffff}
	for range 2 {
		if err := recv.Check(0, send.Take()); err != nil {
			t.Fatal(err)
		}
	}
	if recv.Next() != 1 {
		t.Fatalf("after wrapping the next number is %d, want 1", recv.Next())
	}
	if err := recv.Check(0, 0xffffffff); err == nil || !strings.Contains(err.Error(), "a repeat of a buffer 2 back") {
		t.Fatalf("a repeat across the wrap: %v", err)
	}
}
