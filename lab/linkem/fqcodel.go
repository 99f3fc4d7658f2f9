// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"encoding/binary"
	"time"
)

// fqCodel is FQ-CoDel (RFC 8290), following Linux's sch_fq_codel where the
// RFC leaves a choice:
//
//   - Each packet goes to one of len(flows) queues by a hash of its
//     5-tuple (flowHash), each queue with its own CoDel state and its own
//     backlog for CoDel's "more than one packet left" test (Linux tests the
//     whole qdisc's backlog there; for a flow with a single packet queued
//     the two differ only when other flows hold packets).
//   - A queue that becomes active joins the tail of the new-flows list
//     with a deficit of one quantum. Dequeue serves the head of the new
//     list, else of the old list (deficit round robin): a queue whose
//     deficit is used up gets another quantum and moves to the tail of the
//     old list; a queue found empty leaves its list, except that an empty
//     new queue moves to the old list when that is not empty, so a flow
//     cannot stay new by emptying its queue each round (RFC 8290 section
//     4.2, "prevent starvation").
//   - When a packet takes the total over the packet or byte limit, packets
//     are dropped from the head of the queue holding the most bytes until
//     the total fits (RFC 8290 section 4.1; Linux drops a batch of up to
//     64 at once, the RFC one at a time, as here).
type fqCodel struct {
	flows                    []fqFlow
	newFlows, oldFlows       ring[int32]
	quantum                  int
	p                        codelParams
	maxPacket                int
	packets, bytes           int
	limitPackets, limitBytes int
	drop                     dropFunc
}

// fqFlow is one of the queues.
type fqFlow struct {
	q       ring[qpkt]
	bytes   int
	deficit int
	listed  bool // on the new or the old list
	v       codelVars
	parent  *fqCodel
}

func newFQCoDel(flows, quantum int, p codelParams, drop dropFunc) *fqCodel {
	if flows == 0 {
		flows = 1024
	}
	if quantum == 0 {
		quantum = 1500
	}
	f := &fqCodel{flows: make([]fqFlow, flows), quantum: quantum, p: p, drop: drop}
	for i := range f.flows {
		f.flows[i].parent = f
	}
	return f
}

func (f *fqCodel) len() int { return f.packets }

func (f *fqCodel) enqueue(now time.Time, p qpkt) {
	i := int32(p.flow % uint32(len(f.flows)))
	fl := &f.flows[i]
	p.at = now
	fl.q.push(p)
	fl.bytes += p.size
	f.packets++
	f.bytes += p.size
	f.maxPacket = max(f.maxPacket, p.size)
	if !fl.listed {
		fl.listed = true
		fl.deficit = f.quantum
		f.newFlows.push(i)
	}
	for overLimit(f.limitPackets, f.limitBytes, f.packets, f.bytes) {
		fat := f.fattest()
		d, _ := f.flows[fat].pop()
		f.drop(d, false)
	}
}

// fattest is the queue holding the most bytes.
func (f *fqCodel) fattest() int {
	best := 0
	for i := range f.flows {
		if f.flows[i].bytes > f.flows[best].bytes {
			best = i
		}
	}
	return best
}

func (f *fqCodel) dequeue(now time.Time) (qpkt, bool) {
	for {
		list := &f.newFlows
		if list.len() == 0 {
			list = &f.oldFlows
			if list.len() == 0 {
				return qpkt{}, false
			}
		}
		i := list.front()
		fl := &f.flows[i]
		if fl.deficit <= 0 {
			fl.deficit += f.quantum
			list.pop()
			f.oldFlows.push(i)
			continue
		}
		p, ok := fl.v.dequeue(now, f.p, fl, f.maxPacket, f.drop)
		if !ok {
			list.pop()
			if list == &f.newFlows && f.oldFlows.len() > 0 {
				f.oldFlows.push(i)
			} else {
				fl.listed = false
			}
			continue
		}
		fl.deficit -= p.size
		return p, true
	}
}

// pop and backlog make a flow a codelQueue; pop keeps the totals.
func (fl *fqFlow) pop() (qpkt, bool) {
	if fl.q.len() == 0 {
		return qpkt{}, false
	}
	p := fl.q.pop()
	fl.bytes -= p.size
	fl.parent.packets--
	fl.parent.bytes -= p.size
	return p, true
}

func (fl *fqFlow) backlog() int { return fl.bytes }

// flowHash hashes the 5-tuple of a bare IP packet (what TUN carries):
// addresses, protocol and, for TCP and UDP, the ports. It mixes in seed,
// as Linux perturbs its hash, so that two links with different seeds
// collide on different flows. IPv6 extension headers are not walked: a
// packet with one hashes by addresses and next header only; so do IPv4
// fragments after the first and other protocols.
func flowHash(pkt []byte, seed uint64) uint32 {
	h := fnv1a(14695981039346656037^seed, nil)
	var proto byte
	var l4 []byte
	switch {
	case len(pkt) >= 20 && pkt[0]>>4 == 4:
		ihl := int(pkt[0]&0x0f) * 4
		proto = pkt[9]
		h = fnv1a(h, pkt[12:20])
		if fragOff := binary.BigEndian.Uint16(pkt[6:8]) & 0x1fff; fragOff == 0 && ihl >= 20 && len(pkt) >= ihl {
			l4 = pkt[ihl:]
		}
	case len(pkt) >= 40 && pkt[0]>>4 == 6:
		proto = pkt[6]
		h = fnv1a(h, pkt[8:40])
		l4 = pkt[40:]
	default: // not IP: all such packets are one flow
		return uint32(h ^ h>>32)
	}
	h = (h ^ uint64(proto)) * fnvPrime
	if (proto == 6 || proto == 17) && len(l4) >= 4 {
		h = fnv1a(h, l4[:4])
	}
	return uint32(h ^ h>>32)
}

const fnvPrime = 1099511628211

// fnv1a continues a 64-bit FNV-1a hash h over b.
func fnv1a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}
