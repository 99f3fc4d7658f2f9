// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "testing"

// The rotation follows kernel ids, not list positions: ids 5, 1, 2 in list
// order are used 1, 2, 5, 1, ... whatever their windows say.
func TestRRRotatesByID(t *testing.T) {
	c := mkConn(mkSF(5, 100, 10, 10), mkSF(1, 900, 10, 0), mkSF(2, 50, 1, 9))
	var s State
	wantIdx := []int{1, 2, 0, 1, 2, 0}
	for step, w := range wantIdx {
		o := RR{Packets: 1}.Send(c, &s)
		if o.Mask != 1<<w {
			t.Fatalf("step %d: mask %b, want sf[%d] (id %d)", step, o.Mask, w, c.Sf[w].Id)
		}
		if s.W[0] != uint64(c.Sf[w].Id) {
			t.Fatalf("step %d: state %d, want the id used, %d", step, s.W[0], c.Sf[w].Id)
		}
	}
}

func TestRRCases(t *testing.T) {
	cases := []struct {
		name     string
		c        *Conn
		last     uint64
		packets  uint32
		wantMask uint32
		wantLast uint64
		burst    uint32
	}{
		{"first decision takes the smallest id", mkConn(mkSF(3, 1, 10, 0), mkSF(2, 1, 10, 0)), 0, 1, 0b10, 2, 1000},
		{"a full window does not skip", mkConn(mkSF(1, 1, 10, 10), mkSF(2, 1, 10, 0)), 2, 1, 0b01, 1, 1000},
		{"a full send buffer skips", mkConn(mkSF(1, 1, 10, 0, bufferFull()), mkSF(2, 1, 10, 0)), 2, 1, 0b10, 2, 1000},
		{"not established skips", mkConn(mkSF(1, 1, 10, 0), mkSF(2, 1, 10, 0, notEstablished())), 1, 1, 0b01, 1, 1000},
		{"the last one closed: the next id above it", mkConn(mkSF(1, 1, 10, 0), mkSF(3, 1, 10, 0)), 2, 1, 0b10, 3, 1000},
		{"past the largest id: wrap to the smallest", mkConn(mkSF(1, 1, 10, 0), mkSF(3, 1, 10, 0)), 4, 1, 0b01, 1, 1000},
		{"a backup waits while another is usable", mkConn(mkSF(1, 1, 10, 0), mkSF(2, 1, 10, 0, backup())), 1, 1, 0b01, 1, 1000},
		{"backups rotate when no other is usable", mkConn(mkSF(1, 1, 10, 0, bufferFull()), mkSF(2, 1, 10, 0, backup()), mkSF(3, 1, 10, 0, backup())), 2, 1, 0b100, 3, 1000},
		{"burst: packets times that subflow's MSS", mkConn(mkSF(1, 1, 10, 0), mkSF(2, 1, 10, 0, mss(1448))), 1, 4, 0b10, 2, 4 * 1448},
		{"burst capped at the kernel's push limit", mkConn(mkSF(1, 1, 10, 0, mss(1448))), 0, 1000, 0b1, 1, BurstMax},
		{"no MSS yet: a burst of one byte, never 0", mkConn(mkSF(1, 1, 10, 0, mss(0))), 0, 1, 0b1, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := State{}
			s.W[0] = tc.last
			o := RR{Packets: tc.packets}.Send(tc.c, &s)
			if o.Mask != tc.wantMask || o.Burst != tc.burst || s.W[0] != tc.wantLast {
				t.Fatalf("got mask %b burst %d last %d; want mask %b burst %d last %d", o.Mask, o.Burst, s.W[0], tc.wantMask, tc.burst, tc.wantLast)
			}
		})
	}
}

func TestRRNothingUsable(t *testing.T) {
	c := mkConn(mkSF(1, 1, 10, 0, bufferFull()), mkSF(2, 1, 10, 0, notEstablished()))
	s := State{}
	s.W[0] = 7
	if o := (RR{Packets: 1}).Send(c, &s); o.Mask != 0 || s.W[0] != 7 {
		t.Fatalf("mask %b, state %d: want nothing sent and the state kept", o.Mask, s.W[0])
	}
}

// Reinjections go to the lowest-RTT idle usable subflow (as the kernel's
// default), not the next in turn, and leave the rotation alone; with every
// subflow busy, none is marked.
func TestRRRetransOnBest(t *testing.T) {
	c := mkConn(mkSF(1, 30000, 10, 0), mkSF(2, 5000, 10, 10), mkSF(3, 9000, 10, 0))
	s := State{}
	s.W[0] = 1
	o := RR{Packets: 1}.Retrans(c, &s)
	if o.Mask != 0b100 || s.W[0] != 1 {
		t.Fatalf("mask %b state %d: want sf[2] (the lowest-RTT idle one; sf[1] is busy), state 1", o.Mask, s.W[0])
	}
	busy := mkConn(mkSF(1, 30000, 10, 3), mkSF(2, 5000, 10, 10))
	if o := (RR{Packets: 1}).Retrans(busy, &s); o.Mask != 0 {
		t.Fatalf("mask %b with every subflow busy: want none (the kernel retries later)", o.Mask)
	}
}

func TestNewRRDefaultPacket(t *testing.T) {
	m, err := New("rr", Args{})
	if err != nil {
		t.Fatal(err)
	}
	if m.(RR).Packets != 1 {
		t.Fatalf("default packets per turn %d, want 1", m.(RR).Packets)
	}
}
