// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"io"
	"sort"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/mahimahi"
)

// TraceMTU is the number of bytes one trace line may deliver, as in mahimahi.
const TraceMTU = 1500

// Trace is a mahimahi packet-delivery trace: each entry is the millisecond
// at which one TraceMTU-byte delivery opportunity occurs. The trace repeats
// forever with a period equal to its last timestamp.
type Trace struct {
	ms []int64 // non-decreasing, last > 0
}

// LoadTrace reads a trace file.
func LoadTrace(path string) (*Trace, error) {
	ms, err := mahimahi.Load(path)
	if err != nil {
		return nil, err
	}
	return &Trace{ms: ms}, nil
}

// ParseTrace parses one non-negative integer per line (mahimahi.Parse).
func ParseTrace(r io.Reader) (*Trace, error) {
	ms, err := mahimahi.Parse(r)
	if err != nil {
		return nil, err
	}
	return &Trace{ms: ms}, nil
}

// Len is the number of delivery opportunities per period.
func (t *Trace) Len() int { return len(t.ms) }

// Period is the time after which the trace repeats.
func (t *Trace) Period() time.Duration { return time.Duration(t.ms[len(t.ms)-1]) * time.Millisecond }

// MeanRate is the average capacity of the trace in bits per second.
func (t *Trace) MeanRate() float64 {
	return float64(len(t.ms)*TraceMTU*8) / t.Period().Seconds()
}

// at returns the offset from the trace start of opportunity k, counting
// across repetitions.
func (t *Trace) at(k int64) time.Duration {
	n := int64(len(t.ms))
	return time.Duration(k/n)*t.Period() + time.Duration(t.ms[k%n])*time.Millisecond
}

// firstAtOrAfter returns the index of the first opportunity at offset >= d.
func (t *Trace) firstAtOrAfter(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	n := int64(len(t.ms))
	cycle := int64(d / t.Period())
	within := d - time.Duration(cycle)*t.Period()
	i := sort.Search(len(t.ms), func(i int) bool {
		return time.Duration(t.ms[i])*time.Millisecond >= within
	})
	k := cycle*n + int64(i)
	// The end of one cycle and the start of the next can share a timestamp;
	// step back so such opportunities are not skipped.
	for k > 0 && t.at(k-1) >= d {
		k--
	}
	return k
}
