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
//     counts too.
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
// and writes the packet into the other device. Release times never
// decrease, so the delay line between them is a FIFO channel. The writer
// sleeps with nanosleep(2) on its own OS thread because Go timers fire up
// to 1 ms late; to keep those sleeping threads from starving the rest of
// the process, Start raises GOMAXPROCS to NumCPU plus one per writer (it
// never lowers it).
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
//     afterwards; packets already accepted keep their schedule.
//   - Close drops the packets still in flight without counting them.
//   - Every packet crosses user space: each direction costs two system
//     calls per packet plus a wakeup. Two 100 Mbit/s paths loaded at once
//     are fine on two cores (see TestBench); multi-gigabit rates are not
//     the goal.
package linkem
