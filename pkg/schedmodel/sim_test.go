// SPDX-License-Identifier: Apache-2.0

package schedmodel

// A packet-level model of the paths a scheduler decides for, as the
// paper's analysis sees them: each path a fixed window over a bottleneck
// of fixed rate and a fixed propagation delay, symmetric, no loss. The
// sender is the kernel's push loop: it asks the scheduler until it marks
// nothing, pushing the burst onto the chosen subflow's queue, from which
// the subflow sends what its window lets out. The receiver counts data
// that arrives ahead of a gap.

type simPath struct {
	rate uint64 // bytes per second
	rtt  uint64 // base round trip, us
	cwnd uint32 // packets
}

type simPkt struct {
	seq          uint64
	sent, arrive uint64
	ack          uint64
	path         int
}

type simSub struct {
	p        simPath
	queue    []uint64 // sequence numbers, not yet sent
	inflight []simPkt
	free     uint64 // when the bottleneck is idle again, us
	srtt     uint64
	assigned uint64 // packets the scheduler gave it
}

type simResult struct {
	assigned []uint64 // packets per path
	ofo      uint64   // packets that arrived with a gap before them
	maxHeld  int      // most packets the receiver held waiting for a gap, after the first second
	heldAvg  float64  // packets held, averaged over time after the first second
	inOrder  uint64   // packets delivered in order to the application
}

const simMSS = 1500

// simulate runs m for dur us over paths and returns what each path carried
// and how much arrived out of order. The application's data comes in
// fragments of frag bytes, and a push moves whole fragments until the
// burst is used up, as the kernel does (simMSS: the paper's packet by
// packet).
func simulate(m Scheduler, paths []simPath, dur uint64, frag uint64) simResult {
	const step = 50
	subs := make([]simSub, len(paths))
	for i, p := range paths {
		subs[i] = simSub{p: p, srtt: p.rtt}
	}
	var (
		st      State
		next    uint64 // next sequence number to assign
		expect  uint64 // receiver: next in-order sequence
		held    = map[uint64]bool{}
		arrived []simPkt
		res     simResult
		heldSum uint64
		samples uint64
	)
	send := func(now uint64) {
		for i := range subs {
			s := &subs[i]
			for len(s.queue) > 0 && len(s.inflight) < int(s.p.cwnd) {
				ser := simMSS * 1000000 / s.p.rate
				dep := max(now, s.free) + ser
				s.free = dep
				pk := simPkt{seq: s.queue[0], sent: now, arrive: dep + s.p.rtt/2, path: i}
				pk.ack = pk.arrive + s.p.rtt/2
				s.queue = s.queue[1:]
				s.inflight = append(s.inflight, pk)
				arrived = append(arrived, pk)
			}
		}
	}
	for now := uint64(0); now < dur; now += step {
		for i := range subs {
			s := &subs[i]
			for len(s.inflight) > 0 && s.inflight[0].ack <= now {
				sample := now - s.inflight[0].sent
				s.srtt = (7*s.srtt + sample) / 8
				s.inflight = s.inflight[1:]
			}
		}
		rest := arrived[:0]
		for _, pk := range arrived {
			if pk.arrive > now {
				rest = append(rest, pk)
				continue
			}
			if pk.seq != expect {
				res.ofo++
				held[pk.seq] = true
				if now >= 1e6 {
					res.maxHeld = max(res.maxHeld, len(held))
				}
				continue
			}
			expect++
			res.inOrder++
			for held[expect] {
				delete(held, expect)
				expect++
				res.inOrder++
			}
		}
		arrived = rest
		if now >= 1e6 {
			heldSum += uint64(len(held))
			samples++
		}
		send(now)
		for range 64 {
			c := Conn{NowUs: now, N: uint32(len(subs)), SndNxt: next * simMSS, WriteSeq: next*simMSS + frag}
			for i := range subs {
				s := &subs[i]
				c.Sf[i] = Subflow{
					Id: uint32(i + 1), Flags: Active | MemFree,
					SrttUs: uint32(s.srtt), Cwnd: s.p.cwnd, Ssthresh: 1 << 30,
					Inflight: uint32(len(s.inflight)), Mss: simMSS,
					Notsent: uint32(len(s.queue) * simMSS),
				}
			}
			o := m.Send(&c, &st)
			if o.Mask == 0 {
				break
			}
			i := 0
			for o.Mask&(1<<i) == 0 {
				i++
			}
			for left := int64(o.Burst); left > 0; left -= int64(frag) {
				for n := (frag + simMSS - 1) / simMSS; n > 0; n-- {
					subs[i].queue = append(subs[i].queue, next)
					subs[i].assigned++
					next++
				}
			}
			send(now)
		}
	}
	if samples > 0 {
		res.heldAvg = float64(heldSum) / float64(samples)
	}
	for _, s := range subs {
		res.assigned = append(res.assigned, s.assigned)
	}
	return res
}
