// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"slices"
	"sort"
	"time"
)

// Arrivals holds when each byte of a stream first arrived: the first copy
// counts (a retransmission or a redundant copy on another subflow that
// comes later changes nothing). Offsets are those of the application's
// stream, from 0.
type Arrivals struct {
	covered []span  // merged, sorted: which bytes have arrived
	pieces  []piece // first-arrival time of every byte, one piece per newly covered range
	sorted  bool    // pieces sorted by lo
}

type span struct{ lo, hi uint64 }

type piece struct {
	lo, hi uint64
	at     time.Time
}

// Add records that bytes [lo, hi) arrived at t. Bytes already seen keep
// their earlier time.
func (a *Arrivals) Add(lo, hi uint64, at time.Time) {
	if hi <= lo {
		return
	}
	// The covered spans overlapping or touching [lo, hi): i is the first
	// whose end reaches lo, j the first that starts after hi.
	i := sort.Search(len(a.covered), func(k int) bool { return a.covered[k].hi >= lo })
	j := i
	cur := lo
	for j < len(a.covered) && a.covered[j].lo <= hi {
		s := a.covered[j]
		if s.lo > cur {
			a.pieces = append(a.pieces, piece{cur, s.lo, at})
		}
		cur = max(cur, s.hi)
		j++
	}
	if cur < hi {
		a.pieces = append(a.pieces, piece{cur, hi, at})
	}
	merged := span{lo, hi}
	if i < j {
		merged.lo = min(lo, a.covered[i].lo)
		merged.hi = max(hi, a.covered[j-1].hi)
	}
	a.covered = slices.Replace(a.covered, i, j, merged)
	a.sorted = false
}

// Complete returns when every byte of [lo, hi) had arrived (the first
// arrival of the last of them), or false if some never did.
func (a *Arrivals) Complete(lo, hi uint64) (time.Time, bool) {
	if !a.sorted {
		slices.SortFunc(a.pieces, func(x, y piece) int {
			switch {
			case x.lo < y.lo:
				return -1
			case x.lo > y.lo:
				return 1
			}
			return 0
		})
		a.sorted = true
	}
	k := sort.Search(len(a.pieces), func(k int) bool { return a.pieces[k].hi > lo })
	var last time.Time
	cur := lo
	for ; k < len(a.pieces) && cur < hi; k++ {
		p := a.pieces[k]
		if p.lo > cur {
			return time.Time{}, false // a hole
		}
		if p.at.After(last) {
			last = p.at
		}
		cur = p.hi
	}
	return last, cur >= hi
}

// Covered returns the number of distinct bytes that arrived.
func (a *Arrivals) Covered() uint64 {
	var n uint64
	for _, s := range a.covered {
		n += s.hi - s.lo
	}
	return n
}
