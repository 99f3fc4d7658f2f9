// SPDX-License-Identifier: Apache-2.0

// Package linkem emulates network links in user space between two network
// namespaces. It exists because the lab kernel has neither sch_netem nor
// sch_fq, so delay, loss, rate and queue limits cannot be set with tc.
//
// # Model
//
// Each direction of a Path is an independent Link configured by a
// DirectionConfig. A packet offered to a Link goes through these stages, in
// this order:
//
//  1. Random loss: with probability Loss the packet is dropped (counted in
//     DroppedLoss). The draws come from a PRNG seeded with Seed, so the same
//     Seed and the same packet sequence give the same drops.
//  2. Overhead: the packet reaches the queue a uniform random time in
//     [0, Overhead) after it arrived, never before the one in front of it
//     (0 by default; against drop-tail phase effects, see
//     DirectionConfig.Overhead).
//  3. Drop-tail queue: if accepting the packet would make the bottleneck
//     queue hold more than QueuePackets packets or QueueBytes bytes, it is
//     dropped (counted in DroppedQueue). A packet occupies the queue from its
//     arrival until its serialization ends, so the packet being transmitted
//     counts too. With an AQM the queue is that AQM's instead (see below).
//  4. Serialization: the packet leaves the bottleneck size*8/Rate after the
//     previous packet left (or after its own arrival if the link was idle).
//     With a Trace instead of a Rate, every trace line is one opportunity to
//     deliver 1500 bytes; a packet leaves at the opportunity that carries its
//     last byte, leftover bytes of an opportunity go to the next queued
//     packet, and opportunities that find the queue empty are lost (the
//     mahimahi semantics).
//  5. Propagation: the packet is then held for Delay plus a uniform random
//     Jitter in [0, Jitter). Jitter never reorders: a packet is never
//     released before the one in front of it, so the delay line is a FIFO.
//  6. Delivery: the packet is written into the other namespace
//     (DeliveredPackets/DeliveredBytes).
//
// # AQM
//
// DirectionConfig.AQM replaces the drop-tail queue by RED, CoDel or
// FQ-CoDel (the zero value keeps drop-tail, exactly as above):
//
//   - RED (red.go): gentle RED after Floyd and Jacobson 1993. At each
//     arrival an EWMA (weight Wq) of the packets waiting; no drop below
//     MinTh, then p_b rising linearly to MaxP at MaxTh and on to 1 at
//     2*MaxTh, spread by count (p_a = p_b/(1-count*p_b), so gaps between
//     drops are uniform; the drop fraction is about 2p_b/(1+p_b), and every
//     packet goes from p_b = 1/2 on); after an idle period the average
//     decays by (1-Wq)^m, m the idle time over a full-size packet's
//     transmission time. Thresholds in packets; defaults: MinTh a sixth of
//     the hard limit, at least 5, MaxTh 3*MinTh, Wq 0.002, MaxP 0.1.
//   - CoDel (codel.go): RFC 8289's pseudocode: target 5 ms, interval
//     100 ms, drops at interval/sqrt(count) while the sojourn time stays
//     above target, count reuse when the dropping state is re-entered
//     soon after it was left. Hard limit by default 1000 packets.
//   - FQ-CoDel (fqcodel.go): RFC 8290 as Linux implements it: 1024
//     queues by a hash of the IPv4/IPv6 5-tuple (TCP and UDP ports; no
//     IPv6 extension headers walked), CoDel per queue, deficit round
//     robin with a 1500-byte quantum (Linux's 1514 counts the Ethernet
//     header, which TUN packets lack), new flows served before old ones,
//     and on overflow of the limits (default 10240 packets, 32 MiB) drops
//     from the head of the queue holding the most bytes.
//
// CoDel decides when a packet leaves the queue and FQ-CoDel changes the
// order in which packets leave, so a Link with an AQM does not fix a
// packet's departure when it arrives, as drop-tail does. It simulates its
// bottleneck on its own clock instead (queued.go): a packet enters the
// AQM at its arrival time (after loss and overhead), and the AQM is asked
// for the next packet at the exact moment the serializer is free, which
// is the moment a router's driver would ask its qdisc. So CoDel's sojourn
// time is from entering the queue to reaching the serializer, as in the
// RFC, and every decision uses only what has arrived by then. The
// simulation advances on every arrival and, between arrivals, on a third
// goroutine per direction that sleeps until the next dequeue time as the
// writer does; its wakeup latency delays only the handing on of packets,
// never a decision or a release time. The AQM's queue holds only the
// waiting packets, not the one being serialized (as in a Linux qdisc);
// QueuePackets and QueueBytes are its hard limits. AQM drops count in
// DroppedQueue, and those the AQM chose (not a full queue) also in
// DroppedAQM. An AQM cannot be changed on a running Link.
//
// # Units
//
// Rate is in bits per second of IP packet bytes (TUN carries bare IP
// packets, so no Ethernet framing, preamble or FCS is counted). Delay and
// Jitter are one-way. Loss is a probability in [0, 1]. Queue limits count
// IP packets and IP bytes; 0 means unlimited. Trace timestamps are
// milliseconds; the trace repeats with a period equal to its last
// timestamp.
//
// # Forwarding
//
// Start creates one TUN device in each namespace and runs two goroutines per
// direction: a reader that takes packets from one device and asks the Link
// when to release them, and a writer that sleeps until each release time
// and writes the packet into the other device (and, with an AQM, the
// server goroutine described above). Release times never
// decrease, so the delay line between them is a FIFO channel. The writer
// sleeps with nanosleep(2) on its own OS thread because Go timers fire up
// to 1 ms late; to keep those sleeping threads from starving the rest of
// the process, Start raises GOMAXPROCS to NumCPU plus one per writer and
// server (it never lowers it).
//
// # Limits
//
//   - The timing precision is that of a sleeping OS thread (typically tens of
//     microseconds late, see Counters.LateMax), plus the time the kernel
//     needs to move a packet through a TUN device.
//   - With Rate 0 and no Trace there is no bottleneck, so the queue limits
//     never drop anything.
//   - Loss is independent per packet (Bernoulli); there is no burst-loss
//     (Gilbert-Elliott) model, no corruption, duplication or reordering.
//   - At most MaxInFlight packets per direction can be queued or delayed at
//     once; beyond that, packets are dropped as queue drops.
//   - Only IP traffic crosses the link (it is layer 3; there is no ARP and
//     no Ethernet header), and packets are limited to the configured MTU.
//   - Changing a DirectionConfig while running affects packets that arrive
//     afterwards; packets already accepted keep their schedule. With an
//     AQM, its kind, parameters and limits cannot change; the rate, delay
//     and the rest apply to packets dequeued afterwards.
//   - With an AQM the Observer sees a packet on arrival, before the AQM
//     decides; it gets no departure time.
//   - Close drops the packets still in flight without counting them.
//   - Every packet crosses user space: each direction costs two system
//     calls per packet plus a wakeup. Two 100 Mbit/s paths loaded at once
//     are fine on two cores (see TestBench); multi-gigabit rates are not
//     the goal.
package linkem
