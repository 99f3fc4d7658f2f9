// SPDX-License-Identifier: Apache-2.0

package schedmodel

import "testing"

func TestRedundant(t *testing.T) {
	cases := []struct {
		name  string
		c     *Conn
		mask  uint32
		burst uint32
	}{
		{"every usable subflow, full windows too; one packet of the smallest MSS",
			mkConn(mkSF(1, 10, 10, 10, mss(1448)), mkSF(2, 90, 10, 0, mss(1360)), mkSF(3, 40, 4, 1, mss(1448))), 0b111, 1360},
		{"unusable ones left out",
			mkConn(mkSF(1, 10, 10, 0, bufferFull()), mkSF(2, 90, 10, 0), mkSF(3, 40, 4, 1, notEstablished())), 0b010, 1000},
		{"backups left out while another is usable",
			mkConn(mkSF(1, 10, 10, 0, backup()), mkSF(2, 90, 10, 0)), 0b10, 1000},
		{"backups together when nothing else is usable",
			mkConn(mkSF(1, 10, 10, 0, backup()), mkSF(2, 90, 10, 0, bufferFull()), mkSF(3, 90, 10, 0, backup(), mss(900))), 0b101, 900},
		{"nothing usable", mkConn(mkSF(1, 10, 10, 0, bufferFull())), 0, 0},
		{"no MSS yet: a burst of one byte", mkConn(mkSF(1, 10, 10, 0, mss(0)), mkSF(2, 10, 10, 0)), 0b11, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, retrans := range []bool{false, true} {
				var s State
				var o Out
				if retrans {
					o = Redundant{}.Retrans(tc.c, &s)
				} else {
					o = Redundant{}.Send(tc.c, &s)
				}
				if o.Mask != tc.mask || o.Burst != tc.burst || s != (State{}) {
					t.Fatalf("retrans=%v: mask %b burst %d state %v; want mask %b burst %d, no state", retrans, o.Mask, o.Burst, s.W, tc.mask, tc.burst)
				}
			}
		})
	}
}
