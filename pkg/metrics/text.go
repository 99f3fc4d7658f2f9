// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// TextContentType is the media type WriteText produces (Prometheus text
// exposition format 0.0.4).
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// textSink appends samples to one buffer per family, so each family's
// samples are contiguous under its HELP and TYPE lines.
type textSink struct {
	bufs []bytes.Buffer
	num  []byte
	// The label set formatted last, reused while consecutive samples of
	// different families carry the same labels (a subflow's 17 series).
	lastNames  []string
	lastValues []string
	lastText   []byte
}

func (t *textSink) add(f *Family, v float64, lv ...string) {
	b := &t.bufs[f.idx]
	b.WriteString(f.Name)
	if len(lv) > 0 {
		if !t.sameLabels(f.Labels, lv) {
			t.lastNames = f.Labels
			t.lastValues = append(t.lastValues[:0], lv...)
			t.lastText = appendLabels(t.lastText[:0], f.Labels, lv)
		}
		b.Write(t.lastText)
	}
	b.WriteByte(' ')
	switch {
	case math.IsInf(v, 1):
		b.WriteString("+Inf")
	case math.IsInf(v, -1):
		b.WriteString("-Inf")
	case math.IsNaN(v):
		b.WriteString("NaN")
	default:
		t.num = strconv.AppendFloat(t.num[:0], v, 'g', -1, 64)
		b.Write(t.num)
	}
	b.WriteByte('\n')
}

func (t *textSink) sameLabels(names, values []string) bool {
	if len(names) != len(t.lastNames) || len(names) == 0 || &names[0] != &t.lastNames[0] || len(values) != len(t.lastValues) {
		return false
	}
	for i, v := range values {
		if t.lastValues[i] != v {
			return false
		}
	}
	return true
}

func appendLabels(b []byte, names, values []string) []byte {
	b = append(b, '{')
	for i, l := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l...)
		b = append(b, '=', '"')
		b = appendLabelValue(b, values[i])
		b = append(b, '"')
	}
	return append(b, '}')
}

// appendLabelValue escapes backslash, double quote and newline.
func appendLabelValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return b
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

// maxKeptBuffer is the largest family buffer kept between scrapes: one
// per-subflow family at 10,000 subflows takes about 1.5 MB.
const maxKeptBuffer = 4 << 20

// WriteText reads the maps once and writes the same metrics as Collect, in
// the text exposition format. Families without samples are left out, as
// the registry does.
func (c *Collector) WriteText(w io.Writer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bufs) != len(families) {
		c.bufs = make([]bytes.Buffer, len(families))
	}
	for i := range c.bufs {
		c.bufs[i].Reset()
	}
	t := &textSink{bufs: c.bufs}
	c.collect(t)
	var hdr bytes.Buffer
	for _, f := range mapsFamilies {
		b := &c.bufs[f.idx]
		if b.Len() == 0 {
			continue
		}
		hdr.Reset()
		hdr.WriteString("# HELP ")
		hdr.WriteString(f.Name)
		hdr.WriteByte(' ')
		_, _ = helpEscaper.WriteString(&hdr, f.Help)
		hdr.WriteString("\n# TYPE ")
		hdr.WriteString(f.Name)
		if f.Type == prometheus.CounterValue {
			hdr.WriteString(" counter\n")
		} else {
			hdr.WriteString(" gauge\n")
		}
		if _, err := w.Write(hdr.Bytes()); err != nil {
			return err
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	}
	// Keep the buffers for the next scrape (growing them again is a good
	// part of a large scrape's time), but not tens of megabytes after a
	// burst of subflows.
	for i := range c.bufs {
		if c.bufs[i].Cap() > maxKeptBuffer {
			c.bufs[i] = bytes.Buffer{}
		}
	}
	return nil
}
