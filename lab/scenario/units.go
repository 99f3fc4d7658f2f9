// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Units in scenario files. Numbers without a unit are in the base unit
// (bits per second, bytes, seconds for durations is NOT assumed: durations
// need a unit).

// ParseRate parses a rate: "10Mbit", "10 Mbps", "500kbit", "1.5G", or a
// plain number of bits per second. k/M/G are powers of 1000.
func ParseRate(s string) (uint64, error) {
	v, unit, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	if strings.Contains(unit, "B") {
		return 0, fmt.Errorf("rate %q: give rates in bits (kbit, Mbit, Gbit), not bytes", s)
	}
	mult, ok := multiplier(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(unit, "/s"), "ps"), "it"), nil)
	if !ok {
		return 0, fmt.Errorf("rate %q: unknown unit %q (use bit, kbit, Mbit or Gbit; per second)", s, unit)
	}
	r, err := scale("rate", s, v, mult)
	return uint64(r), err
}

// binary are the units of powers of 1024 that sizes take.
var binary = map[string]float64{"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}

// ParseSize parses a byte count: "100KB" (10^3), "10MB", "1MiB" (2^20),
// "1500B" or a plain number of bytes.
func ParseSize(s string) (int64, error) {
	v, unit, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	mult, ok := multiplier(unit, binary)
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use B, KB, MB, GB, KiB, MiB, GiB)", s, unit)
	}
	b, err := scale("size", s, v, mult)
	return int64(b), err
}

// multiplier is the factor of a unit: none or b(it/yte), k, m or g
// (powers of 1000, with or without a trailing b), or one of more.
func multiplier(unit string, more map[string]float64) (float64, bool) {
	u := strings.ToLower(unit)
	switch u {
	case "", "b":
		return 1, true
	case "k", "kb":
		return 1e3, true
	case "m", "mb":
		return 1e6, true
	case "g", "gb":
		return 1e9, true
	}
	m, ok := more[u]
	return m, ok
}

// scale is v units of mult, rounded; what (rate, size) and s name the value
// in the error for a negative or non-finite number.
func scale(what, s string, v, mult float64) (float64, error) {
	if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%s %q must be a non-negative number", what, s)
	}
	return math.Round(v * mult), nil
}

// ParseProb parses a probability: "2%" or 0.02.
func ParseProb(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil {
		return 0, fmt.Errorf("probability %q: want a number in [0, 1] or a percentage like 2%%", s)
	}
	if pct {
		v /= 100
	}
	if !(v >= 0 && v <= 1) {
		return 0, fmt.Errorf("probability %q is outside [0, 1]", s)
	}
	return v, nil
}

// ParseDuration parses a Go duration ("150ms", "1m30s"); "0" is zero.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a number with a unit, e.g. 150ms or 30s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// Queue is a drop-tail queue limit: bytes, packets (of 1500 bytes) or a
// multiple of the bandwidth-delay product of the link.
type Queue struct {
	Bytes   int64
	Packets int64
	BDP     float64
}

// ParseQueue parses "100pkt", "150KB" (any size) or "1bdp".
func ParseQueue(s string) (Queue, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch {
	case strings.HasSuffix(t, "bdp"):
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "bdp")), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return Queue{}, fmt.Errorf("queue %q: want a positive multiple of the BDP, e.g. 1bdp", s)
		}
		return Queue{BDP: v}, nil
	case strings.HasSuffix(t, "pkt") || strings.HasSuffix(t, "pkts") || strings.HasSuffix(t, "packets"):
		num := strings.TrimSpace(strings.TrimRight(t, "pktaces"))
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || v <= 0 {
			return Queue{}, fmt.Errorf("queue %q: want a positive packet count, e.g. 100pkt", s)
		}
		return Queue{Packets: v}, nil
	}
	b, err := ParseSize(s)
	if err != nil {
		return Queue{}, fmt.Errorf("queue %q: want 100pkt, 150KB or 1bdp", s)
	}
	if b <= 0 {
		return Queue{}, fmt.Errorf("queue %q must be positive", s)
	}
	return Queue{Bytes: b}, nil
}

func (q Queue) String() string {
	switch {
	case q.BDP > 0:
		return strconv.FormatFloat(q.BDP, 'g', -1, 64) + "bdp"
	case q.Packets > 0:
		return strconv.FormatInt(q.Packets, 10) + "pkt"
	case q.Bytes > 0:
		return strconv.FormatInt(q.Bytes, 10) + "B"
	}
	return "default"
}

// splitNumber splits "10.5 Mbit" into 10.5 and "Mbit".
func splitNumber(s string) (float64, string, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == '-' || t[i] == '+' || t[i] == 'e' && i > 0 && i+1 < len(t) && (t[i+1] >= '0' && t[i+1] <= '9' || t[i+1] == '-')) {
		i++
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	if err != nil {
		return 0, "", fmt.Errorf("%q does not start with a number", s)
	}
	return v, strings.TrimSpace(t[i:]), nil
}

// FormatRate prints bits per second with a unit.
func FormatRate(b uint64) string {
	switch {
	case b == 0:
		return "unlimited"
	case b%1e9 == 0:
		return fmt.Sprintf("%dGbit", b/1e9)
	case b >= 1e6:
		return strconv.FormatFloat(float64(b)/1e6, 'g', -1, 64) + "Mbit"
	case b >= 1e3:
		return strconv.FormatFloat(float64(b)/1e3, 'g', -1, 64) + "kbit"
	}
	return fmt.Sprintf("%dbit", b)
}

// FormatSize prints a byte count with a decimal unit.
func FormatSize(b int64) string {
	switch {
	case b >= 1e6 && b%1e5 == 0:
		return strconv.FormatFloat(float64(b)/1e6, 'g', -1, 64) + "MB"
	case b >= 1e3 && b%100 == 0:
		return strconv.FormatFloat(float64(b)/1e3, 'g', -1, 64) + "KB"
	}
	return fmt.Sprintf("%dB", b)
}
