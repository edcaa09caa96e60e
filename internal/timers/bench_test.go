package timers

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/weirhq/weir/internal/cpumeter"
	"github.com/weirhq/weir/internal/keygroup"
	"github.com/weirhq/weir/internal/statebackend/budget"
)

// meter times the benchmark and its process CPU (cpu-ns/op, what to compare
// on a shared machine) over the timed parts only.
type meter struct {
	b     *testing.B
	start cpumeter.Sample
	cpu   time.Duration
}

func startMeter(b *testing.B) *meter {
	b.ReportAllocs()
	b.ResetTimer()
	return &meter{b: b, start: cpumeter.Now()}
}

func (m *meter) stop() {
	m.b.StopTimer()
	m.cpu += cpumeter.Now().CPU() - m.start.CPU()
}

func (m *meter) resume() {
	m.start = cpumeter.Now()
	m.b.StartTimer()
}

func (m *meter) done() {
	m.stop()
	m.b.ReportMetric(float64(m.cpu.Nanoseconds())/float64(m.b.N), "cpu-ns/op")
}

// The microbenchmarks of the timer service (docs/benchmarks.md, "Timer
// registration"): 100,000 keys of 8 bytes (an int64 key's encoding), 128
// key groups, event time; with "ns" each timer has a window's namespace
// (16 bytes, as the window operator's). The service counts its timers
// against a budget.Budget (of a terabyte), as on the hashmap backend.

const benchKeys = 100_000

type benchKey struct {
	key []byte
	kg  int
}

func newBench() *Service {
	s := New(keygroup.Range{Start: 0, End: 127})
	s.UseMemory(budget.New(1 << 40))
	return s
}

func benchKeySet() []benchKey {
	ks := make([]benchKey, benchKeys)
	for i := range ks {
		k := binary.BigEndian.AppendUint64(nil, uint64(i)*0x9e3779b97f4a7c15)
		ks[i] = benchKey{k, keygroup.ForHash(keygroup.HashBytes(k), 128)}
	}
	return ks
}

var nsBuf [16]byte

func benchNS(withNS bool, ts int64) []byte {
	if !withNS {
		return nil
	}
	binary.BigEndian.PutUint64(nsBuf[:], uint64(ts-1000))
	binary.BigEndian.PutUint64(nsBuf[8:], uint64(ts))
	return nsBuf[:]
}

var benchCases = []struct {
	name string
	ns   bool
}{{"ns=none", false}, {"ns=window", true}}

// BenchmarkRegisterDistinct registers a new timer per op (key i mod
// 100,000, a later time each round of the keys); every 200,000 timers the
// watermark fires them, untimed, so the service stays at its steady size.
func BenchmarkRegisterDistinct(b *testing.B) {
	for _, tc := range benchCases {
		b.Run(tc.name, func(b *testing.B) {
			ks := benchKeySet()
			s := newBench()
			m := startMeter(b)
			for i := range b.N {
				ts := int64(i/benchKeys+1) * 1000
				k := &ks[i%benchKeys]
				if i%benchKeys == 0 {
					s.SetCurrentNamespace(benchNS(tc.ns, ts))
				}
				s.SetCurrentKey(k.key, k.kg)
				s.RegisterEventTime(ts)
				if (i+1)%(2*benchKeys) == 0 {
					m.stop()
					s.AdvanceWatermark(ts, func(Timer) {})
					m.resume()
				}
			}
			m.done()
		})
	}
}

// BenchmarkRegisterDuplicate registers, per op, a timer that is already
// there (one per key, as a window's end timer registered by every element).
func BenchmarkRegisterDuplicate(b *testing.B) {
	for _, tc := range benchCases {
		b.Run(tc.name, func(b *testing.B) {
			ks := benchKeySet()
			s := newBench()
			s.SetCurrentNamespace(benchNS(tc.ns, 1000))
			for i := range ks {
				s.SetCurrentKey(ks[i].key, ks[i].kg)
				s.RegisterEventTime(1000)
			}
			m := startMeter(b)
			for i := range b.N {
				k := &ks[(i*7919)%benchKeys]
				s.SetCurrentKey(k.key, k.kg)
				s.RegisterEventTime(1000)
			}
			m.done()
		})
	}
}

// BenchmarkFire fires, per op, one of 100,000 timers (one per key, at 10
// distinct times); their registration is untimed.
func BenchmarkFire(b *testing.B) {
	for _, tc := range benchCases {
		b.Run(tc.name, func(b *testing.B) {
			ks := benchKeySet()
			s := newBench()
			m := startMeter(b)
			fired := 0
			for round := int64(1); fired < b.N; round++ {
				m.stop()
				base := round * 100
				for i := range ks {
					ts := base + int64(i%10)
					s.SetCurrentNamespace(benchNS(tc.ns, ts))
					s.SetCurrentKey(ks[i].key, ks[i].kg)
					s.RegisterEventTime(ts)
				}
				m.resume()
				s.AdvanceWatermark(base+99, func(Timer) { fired++ })
			}
			m.done()
		})
	}
}

// BenchmarkCycle registers 100,000 distinct timers and fires them all, per
// op one timer: registration and firing together.
func BenchmarkCycle(b *testing.B) {
	for _, tc := range benchCases {
		b.Run(tc.name, func(b *testing.B) {
			ks := benchKeySet()
			s := newBench()
			m := startMeter(b)
			for i := 0; i < b.N; {
				base := int64(i/benchKeys+1) * 100
				for j := range ks {
					ts := base + int64(j%10)
					s.SetCurrentNamespace(benchNS(tc.ns, ts))
					s.SetCurrentKey(ks[j].key, ks[j].kg)
					s.RegisterEventTime(ts)
				}
				s.AdvanceWatermark(base+99, func(Timer) {})
				i += benchKeys
			}
			m.done()
		})
	}
}
