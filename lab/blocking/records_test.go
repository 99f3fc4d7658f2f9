// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"bytes"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// chunked hands out at most n bytes per Read, so records complete across
// reads and several complete in one.
type chunked struct {
	r io.Reader
	n int
}

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

func TestSendReceive(t *testing.T) {
	var buf bytes.Buffer
	before := time.Now()
	n, err := Send(&buf, SendOptions{RecordSize: 100, Bytes: 1050})
	if err != nil || n != 1000 {
		t.Fatalf("sent %d, %v; want the 10 whole records that fit in 1050 bytes", n, err)
	}
	reads, err := Receive(chunked{&buf, 70}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(reads) != 10 {
		t.Fatalf("%d records read, want 10", len(reads))
	}
	for i, r := range reads {
		if r.Offset != uint64(i*100) || r.Sent.Before(before.Add(-time.Second)) || r.Read.Before(r.Sent) {
			t.Errorf("record %d: %+v", i, r)
		}
	}

	// A stream missing 100 bytes at 300 is caught at the first record
	// boundary after the hole.
	var ok bytes.Buffer
	if _, err := Send(&ok, SendOptions{RecordSize: 100, Bytes: 1000}); err != nil {
		t.Fatal(err)
	}
	b := ok.Bytes()
	damaged := append(append([]byte(nil), b[:300]...), b[400:]...)
	if _, err := Receive(bytes.NewReader(damaged), 100); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a stream with a hole: %v", err)
	}
	if _, err := Receive(bytes.NewReader(b[:950]), 100); err == nil {
		t.Error("a stream ending inside a record read without error")
	}
}

// A paced sender spreads its records over time at the given rate.
func TestSendPaced(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	if _, err := Send(&buf, SendOptions{RecordSize: 1000, Bytes: 10000, RateBits: 400e3}); err != nil {
		t.Fatal(err)
	}
	// 9 gaps of 1000 bytes at 50 kB/s: 180 ms at least.
	if d := time.Since(start); d < 180*time.Millisecond {
		t.Errorf("10 records at 400 kbit/s took %v", d)
	}
}

// The per-record join: each record's blocking time is its read time
// minus the arrival of its last byte; a record the capture did not see
// voids the measurement.
func TestJoin(t *testing.T) {
	base := time.Unix(500, 0)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	c := &Conn{Client: netip.MustParseAddrPort("10.0.0.1:1")}
	c.arrivals.Add(0, 150, ms(10))   // the fast path: records 0 and half of 1
	c.arrivals.Add(200, 300, ms(12)) // record 2, ahead of a hole
	c.arrivals.Add(150, 200, ms(40)) // the slow path fills the hole
	reads := []Read{
		{Offset: 0, Sent: ms(0), Read: ms(11)},
		{Offset: 100, Sent: ms(1), Read: ms(41)},
		{Offset: 200, Sent: ms(2), Read: ms(41)},
	}
	s, err := Join(reads, 100, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ blocking, delay time.Duration }{
		{1 * time.Millisecond, 11 * time.Millisecond},
		{1 * time.Millisecond, 40 * time.Millisecond},
		{29 * time.Millisecond, 39 * time.Millisecond}, // complete at 12 ms, blocked behind record 1
	}
	for i, w := range want {
		if s[i].Blocking() != w.blocking || s[i].Delay() != w.delay {
			t.Errorf("record %d: blocking %v delay %v, want %v %v", i, s[i].Blocking(), s[i].Delay(), w.blocking, w.delay)
		}
	}
	if _, err := Join(append(reads, Read{Offset: 300, Read: ms(50)}), 100, c); err == nil {
		t.Error("a record the capture never saw arrive joined without error")
	}
}

func TestSummarize(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(d)
	if s.N != 100 || s.Mean != 50.5 || s.P50 != 50 || s.P95 != 95 || s.P99 != 99 || s.Max != 100 || s.Min != 1 {
		t.Errorf("summary of 1..100 ms: %+v", s)
	}
	if (Summarize(nil) != Summary{}) {
		t.Error("the summary of nothing is not empty")
	}
}

func TestGoodput(t *testing.T) {
	base := time.Unix(0, 0)
	var reads []Read
	for i := 0; i <= 20; i++ { // 1000 bytes every 100 ms for 2 s
		reads = append(reads, Read{Offset: uint64(i * 1000), Read: base.Add(time.Duration(i) * 100 * time.Millisecond)})
	}
	g, err := Goodput(reads, 1000, time.Second)
	if err != nil || g != 80e3 {
		t.Errorf("goodput after a 1 s warm-up: %v %v, want 80 kbit/s", g, err)
	}
	if _, err := Goodput(reads, 1000, 3*time.Second); err == nil {
		t.Error("a warm-up longer than the transfer gave a goodput")
	}
}
