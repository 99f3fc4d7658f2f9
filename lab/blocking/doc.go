// SPDX-License-Identifier: Apache-2.0

// Package blocking measures receive-buffer blocking time on MPTCP
// connections: how long data that has reached the receiving host waits
// before the application can read it, because earlier data (sent on a
// slower path) has not arrived yet. It is the quantity DAPS (seed 001)
// sets out to reduce; see docs/results/sched.md for the method.
//
// The sender writes fixed-size records, each carrying its stream offset
// and the time it was written (Send). The receiver notes when the
// application's read completed each record (Receive). A packet capture on
// the receiving host's interfaces (Capture, an AF_PACKET socket with
// kernel receive timestamps) follows the connection's subflows and their
// DSS mappings (Tracker) to learn when every byte of the data stream first
// reached the host. A record's blocking time is then
//
//	read time - arrival time of the last of its bytes to arrive
//
// and its one-way delivery delay is read time - send time. Sender and
// receiver must share a clock (one host, or one VM, with namespaces).
//
// WorstCase is the seed's model of the largest blocking time on two
// paths.
package blocking
