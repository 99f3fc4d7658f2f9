// SPDX-License-Identifier: Apache-2.0

package ssthresh

import (
	"testing"

	"github.com/mptcp-cc/mptcp-cc/lab/cawatch"
)

// An episode is a reduction that got an implausible ssthresh from a
// plausible window: counted once however many sightings it has, again for
// the next reduction, and not at all when the reduction started from the
// implausible window the socket kept.
func TestEpisodes(t *testing.T) {
	const bad, limit = 0x81104110, 1 << 20
	sighting := func(sock, at uint64, ss, pss, pcwnd uint32) cawatch.Sighting {
		return cawatch.Sighting{Sock: sock, AtNs: at, Ssthresh: ss, PriorSsthresh: pss, PriorCwnd: pcwnd, Cwnd: 10}
	}
	ss := []cawatch.Sighting{
		// socket 1: one reduction from cwnd 5 seen three times...
		sighting(1, 3, bad, 3, 5), sighting(1, 1, bad, 3, 5), sighting(1, 2, bad, 3, 5),
		// ...then a cascade from the bad window (not counted)...
		sighting(1, 4, bad/2, bad, bad),
		// ...then a new reduction from a plausible window.
		sighting(1, 9, bad, 4, 6),
		// socket 2: a sighting with only prior_ssthresh implausible.
		sighting(2, 5, 7, bad, 9),
		// socket 3: one reduction.
		sighting(3, 6, bad, 2, 3),
	}
	if n, sockets := episodes(ss, limit); n != 3 || sockets != 2 {
		t.Errorf("episodes = %d in %d sockets, want 3 in 2", n, sockets)
	}
}
