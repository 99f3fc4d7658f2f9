// SPDX-License-Identifier: Apache-2.0

package blocking

import (
	"math"
	"time"
)

// ModelPath is one path of the worst-case model: its capacity and its
// round-trip time (propagation, no queueing).
type ModelPath struct {
	RateBits float64
	RTT      time.Duration
}

// SeedPacketBytes is the packet size L of seed 001's model and runs.
const SeedPacketBytes = 1500

// WorstCase is seed 001's worst-case model of the receive-buffer blocking
// time on two paths, fast (path 0) and slow (path 1):
//
//	T_maxblock = (RTT1 - RTT0)/2 + L/C1 - L/C0
//
// Two packets leave the sender together, consecutive in the stream, the
// earlier one on the slow path. The later one is fully received after
// RTT0/2 + L/C0 (one-way propagation plus its own serialization), the
// earlier one after RTT1/2 + L/C1; until then the later one is complete
// at the receiver but cannot be read. That is the longest any data waits
// when the queues are empty: data sent on the slow path before it would
// have arrived earlier still.
//
// The seed states the model only through its table (RTT0 = 20 ms,
// L = 1500 B; TestWorstCaseSeedTable): the RTT term gives its 0.040 s and
// 0.090 s, and the serialization terms its +-1 ms around them.
func WorstCase(fast, slow ModelPath, packetBytes int) time.Duration {
	ser := func(p ModelPath) float64 { return float64(packetBytes*8) / p.RateBits }
	secs := (slow.RTT-fast.RTT).Seconds()/2 + ser(slow) - ser(fast)
	return time.Duration(math.Round(secs * float64(time.Second)))
}

// Asymmetry is seed 001's A = (C1 * RTT1) / (C0 * RTT0): the ratio of the
// paths' bandwidth-delay products.
func Asymmetry(fast, slow ModelPath) float64 {
	return slow.RateBits * slow.RTT.Seconds() / (fast.RateBits * fast.RTT.Seconds())
}
