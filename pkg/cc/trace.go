// SPDX-License-Identifier: Apache-2.0

package cc

import "github.com/mptcp-cc/mptcp-cc/pkg/structops"

// Trace event kinds (MPCC_TRACE_* in bpf/include/cc_types.h).
const (
	TraceAvoid = 1 // a congestion-avoidance step
	TraceLoss  = 2 // the window chosen after a loss
	TraceLISA  = 3 // a LISA donor repaid the window a joiner took
)

// TraceReducing in TraceEvent.Flags: a LISA repayment during a window
// reduction (CWR, Recovery or Loss).
const TraceReducing = 1

// TracePath mirrors struct mpcc_path.
type TracePath struct {
	Cwnd      uint32
	SRTTUs    uint32
	MinRTTUs  uint32
	Pad       uint32
	LossBytes uint64
}

// TraceEvent mirrors struct mpcc_trace_event: one decision with every
// input it was made from.
type TraceEvent struct {
	ID            uint64
	Kind          uint32
	Acked         uint32
	CwndBefore    uint32
	CwndAfter     uint32
	AccBefore     int64
	AccAfter      int64
	Ssthresh      uint32
	SsthreshAfter uint32
	Clamp         uint32 // LISA: the loss window (prior_cwnd)
	Flags         uint32 // LISA: TraceReducing
	Coupled       int64
	N             uint32
	TargetUs      uint32
	Paths         [8]TracePath
}

// TraceReader collects trace events of a loaded congestion control in the
// background until Stop.
type TraceReader = structops.TraceReader[TraceEvent]

// ReadTrace starts collecting from the pinned trace ring buffer of name.
func ReadTrace(root, name string) (*TraceReader, error) {
	m, err := OpenTrace(root, name)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return structops.ReadTrace[TraceEvent](m, "bpf/include/cc_types.h and pkg/cc/trace.go")
}
