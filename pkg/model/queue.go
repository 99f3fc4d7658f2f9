// SPDX-License-Identifier: Apache-2.0

package model

import (
	"container/heap"
	"math/rand/v2"
	"time"
)

// SimulateQueue is the model's view of the fairness testbed
// (docs/results/fairness.md): connections of one or more subflows sharing
// one drop-tail FIFO bottleneck, packet by packet. Where Simulate draws
// losses at random, here a packet is lost when it finds the queue full,
// so who loses follows from the senders' windows and timing alone. What
// it models, and nothing more:
//
//   - the bottleneck serves QueueConfig.RateBits in packets of
//     queuePktBytes, FIFO, and drops an arrival that finds QueuePkts
//     packets already waiting or in service;
//   - base RTT split evenly between the way to the receiver (after the
//     queue) and the way back;
//   - each sender sends back to back at its access link's rate whenever
//     its packets in flight are below cwnd, after a random processing
//     delay of up to SendJitter per batch. Without it, drop-tail phase
//     effects decide who loses, not the algorithms: with 50 us, one Reno
//     flow against another took 0.60 or 1.67 of it, seed after seed, at
//     10 ms and a 17-packet queue; with one packet's service time (Floyd
//     and Jacobson's remedy, and what callers should use) 0.97-1.06;
//   - the receiver acknowledges every second packet of a subflow at once
//     and a lone one after delAckTimeout, and at once when a gap shows;
//   - a transmission is lost when three sent after it on its subflow are
//     acknowledged (SACK's rule); the loss of one sent after the last
//     reduction began sets cwnd to the algorithm's ssthresh (no PRR), and
//     recovery (no growth) ends when a packet sent after that is
//     acknowledged; a subflow with nothing acknowledged for
//     an RTO (200 ms, or 2 srtt if longer) loses everything in flight and
//     restarts at one packet;
//   - growth through AvoidStep, the integer code the BPF programs are
//     checked against, on every ACK outside recovery (every subflow is
//     always cwnd-limited: bulk senders).
//
// A subflow of a connection is exactly a TCP flow here, coupled only by
// the algorithm: what MPTCP's own machinery adds (one send buffer, one
// scheduler, one receive queue for all subflows) is not modelled. So an
// uncoupled connection of n subflows takes n shares, as n TCP flows do.
type QueueConfig struct {
	RateBits   float64       // bottleneck rate, bits/s
	BaseRTT    time.Duration // round trip without queueing
	QueuePkts  int           // packets the bottleneck holds, in service included
	SendJitter time.Duration // a sender's processing delay before a batch, uniform in [0, SendJitter)
	Target     time.Duration // RSF's target queueing delay (ignored by the others)
	Conns      []QueueConn
	Dur        time.Duration // simulated time; the first 10% is left out
	Seed       uint64
}

// QueueConn is one connection: Subflows subflows running Algo (a TCP flow
// is one subflow of Reno).
type QueueConn struct {
	Algo     Algorithm
	Subflows int
}

// QueueResult is what each connection delivered, packets per second after
// the first 10% of the run, and how many of its packets the queue dropped.
type QueueResult struct {
	Delivered []float64
	Drops     []int
}

const (
	queuePktBytes = 1500
	accessBits    = 10e9 // a sender's link to the bottleneck: only spaces a burst
	delAckTimeout = 40 * time.Millisecond
	minRTO        = 200 * time.Millisecond // Linux's TCP_RTO_MIN
)

type qEventKind int

const (
	qArrive  qEventKind = iota // a packet reaches the bottleneck
	qDepart                    // the packet in service leaves it
	qReceive                   // a packet reaches its receiver
	qAck                       // an ACK reaches its sender
	qDelAck                    // a receiver's delayed-ACK timer
	qRTO                       // a sender's retransmission timer
	qSend                      // a sender's batch after its processing delay
)

type qEvent struct {
	at   time.Duration
	seq  uint64 // tie-break: events at one instant in the order scheduled
	kind qEventKind
	sub  *qSub
	tx   uint64   // the transmission (arrive, depart, receive)
	acks []uint64 // the transmissions an ACK covers
	gen  uint64   // timer generation: stale timers are ignored
}

type qEvents []*qEvent

func (h qEvents) Len() int { return len(h) }
func (h qEvents) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h qEvents) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *qEvents) Push(x any)   { *h = append(*h, x.(*qEvent)) }
func (h *qEvents) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type qTx struct {
	sentAt time.Duration
	done   bool // acknowledged or declared lost
}

type qSub struct {
	conn, idx int
	st        Subflow
	next      uint64         // next transmission id
	out       map[uint64]qTx // sent and not yet acknowledged or lost
	inFlight  uint32
	acked     []uint64 // acknowledged transmissions, in order, for the loss rule (kept short)
	recovery  bool
	// recEnd: the next transmission id when the last reduction began.
	// Recovery ends when one from here on is acknowledged, and only the
	// loss of one from here on starts another reduction.
	recEnd   uint64
	srtt     time.Duration
	minRTT   time.Duration
	sendBusy bool // a batch is pending
	rtoGen   uint64
	olia     lossDistance
	// receiver
	rcvNext    uint64 // the transmission id expected next
	rcvPending []uint64
	delAckGen  uint64
}

// ServiceTime is how long the bottleneck takes to send one packet.
func (cfg QueueConfig) ServiceTime() time.Duration {
	return time.Duration(float64(queuePktBytes*8) / cfg.RateBits * float64(time.Second))
}

// SimulateQueue runs cfg and returns each connection's delivery rate.
func SimulateQueue(cfg QueueConfig) QueueResult {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x717565)) // "que"
	var (
		events  qEvents
		seq     uint64
		now     time.Duration
		queue   []*qEvent // waiting or in service, head in service
		conns   = make([][]*qSub, len(cfg.Conns))
		res     = QueueResult{Delivered: make([]float64, len(cfg.Conns)), Drops: make([]int, len(cfg.Conns))}
		settle  = cfg.Dur / 10
		service = cfg.ServiceTime()
		gap     = time.Duration(float64(queuePktBytes*8) / accessBits * float64(time.Second))
		oneWay  = cfg.BaseRTT / 2
	)
	at := func(t time.Duration, e *qEvent) {
		seq++
		e.at, e.seq = t, seq
		heap.Push(&events, e)
	}
	for c, qc := range cfg.Conns {
		for i := 0; i < qc.Subflows; i++ {
			s := &qSub{conn: c, idx: i, out: map[uint64]qTx{}, st: Subflow{Cwnd: 10, Ssthresh: 0x7fffffff, Clamp: CwndCap}}
			conns[c] = append(conns[c], s)
		}
	}
	// snapshot is what mpcc_collect gives the algorithm: s first, then
	// its siblings.
	snapshot := func(s *qSub) Conn {
		subs := conns[s.conn]
		c := Conn{Paths: make([]Path, 0, len(subs)), TargetUs: uint32(cfg.Target.Microseconds())}
		for k := range subs {
			o := subs[(s.idx+k)%len(subs)]
			srtt, minRTT := o.srtt, o.minRTT
			if srtt == 0 {
				srtt, minRTT = cfg.BaseRTT, cfg.BaseRTT
			}
			c.Paths = append(c.Paths, Path{
				Cwnd:      o.st.Cwnd,
				SRTTUs:    uint32(max(srtt.Microseconds(), 1)),
				MinRTTUs:  uint32(max(minRTT.Microseconds(), 1)),
				LossBytes: o.olia.bytes(),
			})
		}
		return c
	}
	rto := func(s *qSub) time.Duration { return max(minRTO, 2*s.srtt) }
	armRTO := func(s *qSub) {
		s.rtoGen++
		at(now+rto(s), &qEvent{kind: qRTO, sub: s, gen: s.rtoGen})
	}
	// wake schedules a batch if the subflow may send.
	wake := func(s *qSub) {
		if s.sendBusy || s.inFlight >= s.st.Cwnd {
			return
		}
		s.sendBusy = true
		var d time.Duration
		if cfg.SendJitter > 0 {
			d = time.Duration(rng.Int64N(int64(cfg.SendJitter)))
		}
		at(now+d, &qEvent{kind: qSend, sub: s})
	}
	// reduce is a reduction's common part, by fast recovery or timeout:
	// the algorithm's ssthresh, and what was sent so far is its episode.
	reduce := func(s *qSub) {
		s.olia.loss()
		s.st.Acc = 0
		s.st.Ssthresh = max(cfg.Conns[s.conn].Algo.Ssthresh(snapshot(s)).Ssthresh, 2)
		s.recEnd = s.next
	}
	// loss answers the loss of transmission id: one reduction per window,
	// as NewReno's recovery point gives (RFC 6582): a loss of something
	// sent before the last reduction began is part of that reduction's
	// episode, even when found after growth resumed.
	loss := func(s *qSub, id uint64) {
		if id < s.recEnd {
			return
		}
		reduce(s)
		s.recovery = true
		s.st.Cwnd = s.st.Ssthresh
	}
	sendAck := func(s *qSub) {
		if len(s.rcvPending) == 0 {
			return
		}
		at(now+oneWay, &qEvent{kind: qAck, sub: s, acks: s.rcvPending})
		s.rcvPending = nil
		s.delAckGen++
	}

	for c := range conns {
		for _, s := range conns[c] {
			wake(s)
		}
	}
	for events.Len() > 0 {
		e := heap.Pop(&events).(*qEvent)
		now = e.at
		if now >= cfg.Dur {
			break
		}
		s := e.sub
		switch e.kind {
		case qSend:
			s.sendBusy = false
			t := now
			for s.inFlight < s.st.Cwnd {
				id := s.next
				s.next++
				s.out[id] = qTx{sentAt: t}
				s.inFlight++
				at(t, &qEvent{kind: qArrive, sub: s, tx: id})
				t += gap
			}
			armRTO(s)
		case qArrive:
			if len(queue) >= cfg.QueuePkts {
				if now >= settle {
					res.Drops[s.conn]++
				}
				continue // dropped: the sender finds out from later ACKs
			}
			queue = append(queue, e)
			if len(queue) == 1 {
				at(now+service, &qEvent{kind: qDepart})
			}
		case qDepart:
			p := queue[0]
			queue = queue[1:]
			at(now+oneWay, &qEvent{kind: qReceive, sub: p.sub, tx: p.tx})
			if len(queue) > 0 {
				at(now+service, &qEvent{kind: qDepart})
			}
		case qReceive:
			if now >= settle {
				res.Delivered[s.conn]++
			}
			gapSeen := e.tx != s.rcvNext
			s.rcvNext = e.tx + 1
			s.rcvPending = append(s.rcvPending, e.tx)
			if gapSeen || len(s.rcvPending) >= 2 {
				sendAck(s)
			} else {
				at(now+delAckTimeout, &qEvent{kind: qDelAck, sub: s, gen: s.delAckGen})
			}
		case qDelAck:
			if e.gen == s.delAckGen {
				sendAck(s)
			}
		case qAck:
			var newest time.Duration = -1
			var acked uint32
			endsRecovery := false
			for _, id := range e.acks {
				tx, ok := s.out[id]
				if !ok {
					continue // declared lost before its ACK came
				}
				delete(s.out, id)
				s.inFlight--
				acked++
				s.olia.acked += simMSS
				s.acked = append(s.acked, id)
				newest = max(newest, tx.sentAt)
				if s.recovery && id >= s.recEnd {
					endsRecovery = true
				}
			}
			if acked == 0 {
				continue
			}
			if rtt := now - newest; newest >= 0 {
				if s.srtt == 0 {
					s.srtt, s.minRTT = rtt, rtt
				} else {
					s.srtt += (rtt - s.srtt) / 8
					s.minRTT = min(s.minRTT, rtt)
				}
			}
			// SACK's rule: a transmission with three later ones
			// acknowledged is lost.
			if len(s.acked) >= 3 {
				third := s.acked[len(s.acked)-3]
				for id := range s.out {
					if id < third {
						delete(s.out, id)
						s.inFlight--
						loss(s, id)
					}
				}
				s.acked = s.acked[len(s.acked)-2:]
			}
			if endsRecovery {
				s.recovery = false
			}
			if !s.recovery {
				s.st, _, _ = AvoidStep(cfg.Conns[s.conn].Algo, s.st, acked, snapshot(s))
			}
			armRTO(s)
			wake(s)
		case qRTO:
			if e.gen != s.rtoGen || s.inFlight == 0 {
				continue
			}
			for id := range s.out {
				delete(s.out, id)
			}
			s.inFlight = 0
			reduce(s)
			s.st.Cwnd, s.recovery = 1, false
			wake(s)
		}
	}
	span := (cfg.Dur - settle).Seconds()
	for i := range res.Delivered {
		res.Delivered[i] /= span
	}
	return res
}

// ShareAgainstReno is the fairness testbed's case in the model: one
// connection of n subflows running algo against one TCP Reno flow at a
// bottleneck of rateBits with a queue of queuePkts, base RTT rtt, each
// sender jittered by one packet's service time. It returns what the
// connection delivered over what the Reno flow did, per seed (seeds
// 1..seeds), over 120 s or 3,000 base RTTs of simulated time, whichever
// is longer.
func ShareAgainstReno(algo Algorithm, n int, rateBits float64, rtt time.Duration, queuePkts int, target time.Duration, seeds int) []float64 {
	out := make([]float64, 0, seeds)
	for seed := 1; seed <= seeds; seed++ {
		cfg := QueueConfig{
			RateBits:  rateBits,
			BaseRTT:   rtt,
			QueuePkts: queuePkts,
			Target:    target,
			Conns:     []QueueConn{{Algo: algo, Subflows: n}, {Algo: Reno{}, Subflows: 1}},
			Dur:       max(120*time.Second, 3000*rtt),
			Seed:      uint64(seed),
		}
		cfg.SendJitter = cfg.ServiceTime()
		r := SimulateQueue(cfg)
		out = append(out, r.Delivered[0]/r.Delivered[1])
	}
	return out
}
