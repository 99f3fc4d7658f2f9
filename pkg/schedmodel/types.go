// SPDX-License-Identifier: Apache-2.0

// Package schedmodel holds the reference models of the packet schedulers in
// bpf/sched/: the same decision, in Go, from the same snapshot. The types
// mirror bpf/include/sched_types.h field for field (pkg/sched decodes the
// BPF trace into them, checking sizes), and pick.go mirrors sched_pick.h,
// so a decision traced in a kernel replays here and must come out equal.
package schedmodel

// Flags of a subflow (SCHED_SF_*).
const (
	Active    = 1 // established, may send
	Backup    = 2 // marked backup (MP_PRIO)
	MemFree   = 4 // its send buffer takes more
	SlowStart = 8
)

// MaxSubflows is SCHED_MAX_SUBFLOWS; StateWords is SCHED_STATE_WORDS.
const (
	MaxSubflows = 8
	StateWords  = 16
)

// BurstMax is the kernel's cap on one push (MPTCP_SEND_BURST_SIZE).
const BurstMax = 65428

// Subflow mirrors struct mpsch_sf. Times in µs, windows in packets, sizes
// in bytes, rates in bytes per second.
type Subflow struct {
	ID             uint32
	Flags          uint32
	SRTTUs         uint32
	RTTVarUs       uint32
	Cwnd           uint32
	Ssthresh       uint32
	Inflight       uint32
	MSS            uint32
	NotSent        uint32
	RateDelivered  uint32 // packets delivered in the last rate sample...
	RateIntervalUs uint32 // ...over this interval
	Pad            uint32
	PacingRate     uint64
	Delivered      uint64
	BytesAcked     uint64
}

// Conn mirrors struct mpsch_conn.
type Conn struct {
	NowUs    uint64
	SndUna   uint64
	SndNxt   uint64
	WriteSeq uint64
	WndEnd   uint64
	N        uint32
	Retrans  uint32
	SF       [MaxSubflows]Subflow
}

// Out mirrors struct mpsch_out.
type Out struct {
	Mask  uint32 // bit i: send on SF[i]
	Burst uint32 // bytes before the kernel asks again; 0 leaves it
}

// State mirrors struct mpsch_state: the words an algorithm keeps per
// connection.
type State struct {
	W [StateWords]uint64
}

// Trace mirrors struct mpsch_trace: one decision and all it was made from.
type Trace struct {
	Token  uint32
	Ret    uint32
	Conn   Conn
	Before State
	After  State
	Out    Out
}

// Scheduler is one reference model. Both calls may change the state, as
// the BPF program changes its words.
type Scheduler interface {
	Name() string
	Send(c *Conn, s *State) Out
	Retrans(c *Conn, s *State) Out
}

// Args are the load-time tunables (struct mpsch_params.arg); 0 is "the
// algorithm's default", as in BPF.
type Args [6]uint32

func (a Args) get(i int, def uint32) uint32 {
	if a[i] != 0 {
		return a[i]
	}
	return def
}
