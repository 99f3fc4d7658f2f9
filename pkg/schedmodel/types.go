// SPDX-License-Identifier: Apache-2.0

// Package schedmodel holds the reference models of the packet schedulers in
// bpf/sched/: the same decision, in Go, from the same snapshot. The models
// take the structs of bpf/include/sched_types.h themselves, as pkg/abi
// generates them (pkg/sched reads the BPF trace into the same types), and
// pick.go mirrors the rules of sched_pick.h, so a decision traced in a
// kernel replays here and must come out equal.
//
// Each scheduler is one file, NAME.go, whose init registers it in
// pkg/algo's table (name, id, summary, this model): the one place a
// scheduler is declared in Go.
package schedmodel

import "github.com/mptcp-cc/mptcp-cc/pkg/abi"

// Flags of a subflow (Subflow.Flags: enum mpsch_sf_flag).
const (
	Active    = abi.SchedSFActive    // established, may send
	Backup    = abi.SchedSFBackup    // marked backup (MP_PRIO)
	MemFree   = abi.SchedSFMemFree   // its send buffer takes more
	SlowStart = abi.SchedSFSlowStart // cwnd < ssthresh
)

// MaxSubflows is SCHED_MAX_SUBFLOWS and StateWords SCHED_STATE_WORDS, as
// the generated arrays have them.
const (
	MaxSubflows = len(Conn{}.Sf)
	StateWords  = len(State{}.W)
)

// BurstMax is the kernel's cap on one push (MPTCP_SEND_BURST_SIZE).
const BurstMax = 65428

// The snapshot, the answer, the state and the trace record: the generated
// types under the names the models use. Times in µs, windows in packets,
// sizes in bytes, rates in bytes per second.
type (
	Subflow = abi.SchedSubflow // struct mpsch_sf
	Conn    = abi.SchedConn    // struct mpsch_conn: Sf[:N] are the subflows
	Out     = abi.SchedOut     // struct mpsch_out: Mask bit i sends on Sf[i]; Burst 0 leaves it
	State   = abi.SchedState   // struct mpsch_state: the words an algorithm keeps per connection
	Trace   = abi.SchedTrace   // struct mpsch_trace: one decision and all it was made from
)

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
