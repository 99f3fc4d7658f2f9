// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Trace event kinds (TraceEvent.Kind) and TraceReducing in
// TraceEvent.Flags: a LISA repayment during a window reduction (CWR,
// Recovery or Loss). The values are the C enums', through pkg/abi.
const (
	TraceAvoid    = abi.TraceAvoid
	TraceLoss     = abi.TraceLoss
	TraceLISA     = abi.TraceLISA
	TraceReducing = abi.TraceReducing
)

// TraceEvent is one record of the trace ring buffer (struct
// mpcc_trace_event, generated in pkg/abi): one decision with every input
// it was made from, the snapshot in Conn.
type TraceEvent = abi.CCTrace

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
	return structops.ReadTrace[TraceEvent](m, "struct mpcc_trace_event (bpf/include/cc_types.h) and the generated pkg/abi.CCTrace")
}
