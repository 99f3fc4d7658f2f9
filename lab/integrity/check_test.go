// SPDX-License-Identifier: Apache-2.0

package integrity

import (
	"bytes"
	"math"
	"testing"
)

func TestPatternIsPerSeed(t *testing.T) {
	a, b := Pattern(1, 4096), Pattern(1, 4096)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave two patterns")
	}
	if c := Pattern(2, 4096); bytes.Equal(a, c) {
		t.Fatal("two seeds gave the same pattern")
	}
	if p := Pattern(1, 100); !bytes.Equal(p, a[:100]) {
		t.Fatal("a shorter pattern is not a prefix of the longer one")
	}
}

// Each kind of corruption is told apart: where the wrong bytes had been
// sent decides between a misplaced segment, a previous connection's data,
// zeros and overwritten memory.
func TestCheckLocatesWrongBytes(t *testing.T) {
	sent, prev := Pattern(7, 64<<10), Pattern(6, 64<<10)
	if f := Check(0, sent, sent); f != nil {
		t.Fatalf("identical bytes: %+v", f)
	}
	cases := []struct {
		name   string
		mangle func(b []byte)
		origin string
		offset int64
		run    int
	}{
		{"an earlier segment where a later one belongs", func(b []byte) { copy(b[20000:21448], sent[18552:20000]) },
			"sent elsewhere in this connection", 20000, 1448},
		{"the previous connection's bytes", func(b []byte) { copy(b[30000:30100], prev[100:200]) },
			"sent by connection 2 at offset 100", 30000, 100},
		{"zeros", func(b []byte) { clear(b[40000:40064]) }, "zeros", 40000, 64},
		{"bytes sent nowhere", func(b []byte) { copy(b[50000:], Pattern(99, 40)) }, "sent nowhere", 50000, 40},
	}
	for _, c := range cases {
		got := bytes.Clone(sent)
		c.mangle(got)
		f := Check(3, got, sent)
		f.LookIn(2, prev)
		if f == nil {
			t.Fatalf("%s: not found", c.name)
		}
		// A wrong stretch may start or end with bytes that happen to match
		// (1 in 256 each): allow them.
		if f.Offset < c.offset || f.Offset > c.offset+2 || f.Run < c.run-4 || f.Run > c.run || f.Wrong > c.run {
			t.Errorf("%s: offset %d, run %d, wrong %d; want %d, %d", c.name, f.Offset, f.Run, f.Wrong, c.offset, c.run)
		}
		if f.Origin() != c.origin {
			t.Errorf("%s: origin %q (here %v, other %v)", c.name, f.Origin(), f.Here, f.Other)
		}
		if !bytes.Equal(f.Got, got[f.Offset:f.Offset+window]) || !bytes.Equal(f.Want, sent[f.Offset:f.Offset+window]) {
			t.Errorf("%s: the kept window is not the bytes at the offset", c.name)
		}
	}
	got := bytes.Clone(sent)
	copy(got[20000:21448], sent[18552:20000])
	if d, ok := Check(0, got, sent).Shift(); !ok || d != -1448 {
		t.Errorf("shift %d %v, want -1448", d, ok)
	}
}

// A wrong byte in the last few: kept, not looked up (too few to place).
func TestCheckAtTheEnd(t *testing.T) {
	sent := Pattern(1, 1000)
	got := bytes.Clone(sent)
	got[995] ^= 1
	f := Check(0, got, sent)
	f.LookIn(1, Pattern(2, 1000))
	if f == nil || f.Offset != 995 || f.Wrong != 1 || len(f.Got) != 5 || f.Here != nil || f.Other != nil {
		t.Fatalf("%+v", f)
	}
}

func TestWilson(t *testing.T) {
	// 0 of 10,000: the upper bound is about 3.84 per 10,000 (z^2/n).
	if p, lo, hi := Wilson(0, 10000); p != 0 || lo != 0 || math.Abs(hi*1e4-3.84) > 0.01 {
		t.Errorf("0/10000: %v [%v, %v]", p, lo, hi)
	}
	// 77 of 10,000: 61.7 to 96.1 per 10,000.
	if _, lo, hi := Wilson(77, 10000); math.Abs(lo*1e4-61.7) > 0.2 || math.Abs(hi*1e4-96.1) > 0.2 {
		t.Errorf("77/10000: [%v, %v]", lo*1e4, hi*1e4)
	}
}

func TestParseArm(t *testing.T) {
	for in, want := range map[string]Arm{
		"cubic":               {Name: "cubic", CC: "cubic"},
		"lia+csum":            {Name: "lia+csum", CC: "lia", Checksum: true},
		"t_olia+pacing+csum":  {Name: "t_olia+pacing+csum", CC: "t_olia", Checksum: true, Pacing: true},
		"reno+nojoin+offload": {Name: "reno+nojoin+offload", CC: "reno", NoJoin: true, Offload: true},
		"cubic+close":         {Name: "cubic+close", CC: "cubic", CloseEarly: true},
		"cubic+busy":          {Name: "cubic+busy", CC: "cubic", Busy: true},
	} {
		if got, err := ParseArm(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "+csum", "cubic+pace", "cubic+"} {
		if _, err := ParseArm(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
