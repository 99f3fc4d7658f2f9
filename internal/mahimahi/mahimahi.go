// SPDX-License-Identifier: Apache-2.0

// Package mahimahi reads mahimahi packet-delivery traces: one millisecond
// timestamp per line, each a delivery opportunity of one MTU-sized packet;
// the last timestamp is the period after which the trace repeats.
// lab/linkem replays them; the lab's scenario checker reads them to
// validate a scenario without loading the emulator.
package mahimahi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Load reads a trace file; errors name the file and the line.
func Load(path string) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ms, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ms, nil
}

// Parse parses one non-negative integer per line. Blank lines are
// ignored; anything else that is not a non-decreasing integer is an error
// naming the line.
func Parse(r io.Reader) ([]int64, error) {
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
	return ms, nil
}
