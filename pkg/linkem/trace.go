package linkem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
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
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ParseTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTrace parses one non-negative integer per line. Blank lines are
// ignored; anything else that is not a non-decreasing integer is an error
// naming the line.
func ParseTrace(r io.Reader) (*Trace, error) {
	var ms []int64
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("trace line %d: %q is not an integer millisecond timestamp", line, s)
		}
		if v < 0 {
			return nil, fmt.Errorf("trace line %d: negative timestamp %d", line, v)
		}
		if n := len(ms); n > 0 && v < ms[n-1] {
			return nil, fmt.Errorf("trace line %d: timestamp %d goes back before %d", line, v, ms[n-1])
		}
		ms = append(ms, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if len(ms) == 0 {
		return nil, errors.New("trace: no timestamps")
	}
	if ms[len(ms)-1] == 0 {
		// The last timestamp is the repeat period; 0 would replay the trace
		// infinitely often at time 0.
		return nil, errors.New("trace: last timestamp must be > 0 (it is the repeat period)")
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
