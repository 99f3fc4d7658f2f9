// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Sample is one record's timeline: sent by the application, all its bytes
// at the receiving host, read by the application.
type Sample struct {
	Offset  uint64
	Sent    time.Time
	Arrived time.Time // the first arrival of the last of its bytes to arrive
	Read    time.Time
}

// Blocking is how long the record sat complete in the receiving host
// before the application could read it: mostly waiting in the receive
// buffer for earlier data (head-of-line blocking).
func (s Sample) Blocking() time.Duration { return s.Read.Sub(s.Arrived) }

// Delay is the one-way delivery delay, application to application.
func (s Sample) Delay() time.Duration { return s.Read.Sub(s.Sent) }

// Join gives each record read its arrival time from the connection's
// capture. Every record must have arrived: one that did not means the
// capture missed packets, and the measurement is void.
func Join(reads []Read, recordSize int, c *Conn) ([]Sample, error) {
	out := make([]Sample, 0, len(reads))
	for _, r := range reads {
		at, ok := c.Arrived(r.Offset, uint64(recordSize))
		if !ok {
			return nil, fmt.Errorf("the record at %d was read but the capture did not see all of its bytes arrive", r.Offset)
		}
		out = append(out, Sample{Offset: r.Offset, Sent: r.Sent, Arrived: at, Read: r.Read})
	}
	return out, nil
}

// Summary describes a distribution of durations, in milliseconds.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_ms"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Min  float64 `json:"min_ms"`
}

// Summarize returns the summary of d (nearest-rank percentiles).
func Summarize(d []time.Duration) Summary {
	if len(d) == 0 {
		return Summary{}
	}
	ms := make([]float64, len(d))
	var sum float64
	for i, x := range d {
		ms[i] = float64(x) / float64(time.Millisecond)
		sum += ms[i]
	}
	slices.Sort(ms)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(ms)))) - 1
		return ms[max(i, 0)]
	}
	return Summary{
		N: len(ms), Mean: sum / float64(len(ms)),
		P50: rank(0.50), P95: rank(0.95), P99: rank(0.99),
		Max: ms[len(ms)-1], Min: ms[0],
	}
}

// Blockings and Delays list the samples' blocking times and delays.
func Blockings(s []Sample) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = x.Blocking()
	}
	return out
}

// Delays lists the samples' one-way delays.
func Delays(s []Sample) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = x.Delay()
	}
	return out
}

// Goodput is the rate at which records reached the application after the
// first warmup of reading, in bits/s: the bytes of the records read after
// first-read+warmup over the time from then to the last read.
func Goodput(reads []Read, recordSize int, warmup time.Duration) (float64, error) {
	if len(reads) == 0 {
		return 0, fmt.Errorf("no records read")
	}
	from := reads[0].Read.Add(warmup)
	last := reads[len(reads)-1].Read
	if !last.After(from) {
		return 0, fmt.Errorf("the transfer read for %v, not longer than the %v warm-up", last.Sub(reads[0].Read), warmup)
	}
	var n int
	for _, r := range reads {
		if r.Read.After(from) {
			n++
		}
	}
	return float64(n*recordSize*8) / last.Sub(from).Seconds(), nil
}
