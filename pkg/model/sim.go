// SPDX-License-Identifier: Apache-2.0

package model

import (
	"math/rand/v2"
	"time"
)

// The simulator runs an algorithm's model, the same integer code the BPF
// programs are checked against, over paths that lose packets at random: the
// setting in which the papers derive each algorithm's equilibrium (RFC 6356
// section 3, Khalili et al., Peng et al.). It is round-based, as in those
// analyses: a path sends a window per round trip; the ACKs before the first
// loss of a round grow the window one by one (AvoidStep); a round with a loss
// sets the window to the algorithm's ssthresh once, as fast recovery does.
// SimPath.RoundLoss adds the other extreme, a loss in a share of the
// rounds whatever the window: losses per flow, which a shared drop-tail
// queue comes close to (docs/results/fairness.md).
// There is no queue, no timeout and no scheduler, so what it shows is the
// algorithm alone, reproducibly (one seed, one result): what the kernel adds
// on top is the testbed's business (pkg/cc's tests, docs/results/).

// SimPath is one path of a simulation.
type SimPath struct {
	RTT   time.Duration // base round-trip time (the subflow's min RTT)
	Queue time.Duration // standing queueing delay on top (srtt - min RTT; RSF reads it)
	Loss  float64       // probability that a packet is lost, independently
	// RoundLoss is the probability that a round has a loss whatever the
	// window (at a random packet of it): losses per flow, not per packet,
	// the other extreme a drop-tail queue shared by several flows can come
	// close to (docs/results/fairness.md). It adds to Loss.
	RoundLoss float64
}

// SimResult is what a simulation measured on each path.
type SimResult struct {
	MeanCwnd  []float64 // time-averaged window, packets
	Delivered []float64 // packets delivered per second
	Losses    []int     // rounds with a loss
}

// Total returns the summed delivery rate, packets per second.
func (r SimResult) Total() float64 {
	var t float64
	for _, d := range r.Delivered {
		t += d
	}
	return t
}

// Share returns path i's part of the delivered packets.
func (r SimResult) Share(i int) float64 { return r.Delivered[i] / r.Total() }

// Reno is the uncoupled baseline: every subflow on its own, 1/w per ACK and
// half the window on loss, what the kernel's reno does on each subflow.
type Reno struct{}

func (Reno) Name() string        { return "reno" }
func (Reno) Increase(c Conn) Out { return Out{Inc: oneOverW(c.Paths[0].Cwnd)} }
func (Reno) Ssthresh(c Conn) Out { return Out{Ssthresh: renoSsthresh(c)} }

// simMSS is the payload of one packet, for OLIA's byte counts.
const simMSS = 1448

// lossDistance is OLIA's l_r as mpcc_priv keeps it (loss_mark, loss_gap;
// inter_loss_bytes in bpf/include/cc_conn.h), for the simulators.
type lossDistance struct {
	acked uint64 // bytes acked so far
	mark  uint64 // acked at the last loss
	gap   uint64 // bytes between the last two losses
}

// loss closes the current interval.
func (d *lossDistance) loss() { d.gap, d.mark = d.acked-d.mark, d.acked }

// bytes is l_r: the larger of the last closed interval and the open one.
func (d lossDistance) bytes() uint64 { return max(d.gap, d.acked-d.mark) }

type simFlow struct {
	st      Subflow
	next    time.Duration // when the current round ends
	olia    lossDistance
	cwndSum float64 // sum of cwnd * round duration, for the mean
	deliv   uint64
	losses  int
}

// Simulate runs algo on paths for dur of simulated time. target is RSF's
// target queueing delay (ignored by the others). The first 10% of dur is
// slow start and settling, and is left out of the result.
func Simulate(algo Algorithm, paths []SimPath, target, dur time.Duration, seed uint64) SimResult {
	rng := rand.New(rand.NewPCG(seed, 0x73696d)) // "sim"
	flows := make([]simFlow, len(paths))
	for i := range flows {
		flows[i].st = Subflow{Cwnd: 10, Ssthresh: 0x7fffffff, Clamp: CwndCap}
	}
	rtt := func(i int) time.Duration { return paths[i].RTT + paths[i].Queue }
	// snapshot is what mpcc_collect gives the algorithm on path i: i first.
	snapshot := func(i int) Conn {
		c := Conn{Paths: make([]Path, 0, len(paths)), TargetUs: uint32(target.Microseconds())}
		for k := 0; k < len(paths); k++ {
			j := (i + k) % len(paths)
			f := &flows[j]
			c.Paths = append(c.Paths, Path{
				Cwnd:      f.st.Cwnd,
				SRTTUs:    uint32(rtt(j).Microseconds()),
				MinRTTUs:  uint32(paths[j].RTT.Microseconds()),
				LossBytes: f.olia.bytes(),
			})
		}
		return c
	}
	settle := dur / 10
	for {
		// The path whose round ends first.
		i := 0
		for j := range flows {
			if flows[j].next < flows[i].next {
				i = j
			}
		}
		f := &flows[i]
		now := f.next
		if now >= dur {
			break
		}
		sent := f.st.Cwnd
		// Packets up to the first loss are acknowledged one by one.
		var ok uint32
		for ok < sent && rng.Float64() >= paths[i].Loss {
			ok++
		}
		if paths[i].RoundLoss > 0 && rng.Float64() < paths[i].RoundLoss {
			ok = min(ok, uint32(rng.IntN(int(sent))))
		}
		for k := uint32(0); k < ok; k++ {
			f.st, _, _ = AvoidStep(algo, f.st, 1, snapshot(i))
			f.olia.acked += simMSS
		}
		delivered := uint64(ok)
		if ok < sent {
			// The rest of the round: each packet after the first loss is
			// lost on its own, the others arrive (and are recovered, not
			// counted as growth).
			for k := ok + 1; k < sent; k++ {
				if rng.Float64() >= paths[i].Loss {
					delivered++
				}
			}
			f.olia.loss()
			f.st.Ssthresh = algo.Ssthresh(snapshot(i)).Ssthresh
			f.st.Cwnd = f.st.Ssthresh
			if now >= settle {
				f.losses++
			}
		}
		d := rtt(i)
		if now >= settle {
			f.cwndSum += float64(sent) * d.Seconds()
			f.deliv += delivered
		}
		f.next = now + d
	}
	res := SimResult{MeanCwnd: make([]float64, len(paths)), Delivered: make([]float64, len(paths)), Losses: make([]int, len(paths))}
	span := (dur - settle).Seconds()
	for i, f := range flows {
		res.MeanCwnd[i] = f.cwndSum / span
		res.Delivered[i] = float64(f.deliv) / span
		res.Losses[i] = f.losses
	}
	return res
}
