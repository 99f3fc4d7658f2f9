// SPDX-License-Identifier: Apache-2.0

// Package abi is the one Go side of what the BPF programs share with user
// space: every struct a map, a ring buffer or a parameter carries, and the
// enums that give its fields meaning, from bpf/include/cc_types.h
// (congestion controls) and bpf/include/sched_types.h (packet schedulers).
//
// The types are generated, never written by hand: bpf/abi.bpf.c names each
// C type so that it lands in that object's BTF, and bpf2go -type (gen.go,
// run by `make generate`) writes the Go declarations from it, so a field
// changed in C changes in Go at the next build and cannot drift. This file
// only gives them exported names. Field names are bpf2go's: the C name in
// CamelCase (srtt_us is SrttUs); explicit C padding (pad) is a field Pad.
//
// Reading a map or ring buffer record: ebpf.Map.Lookup, Iterate or
// BatchLookup into the type itself, or binary.Read of a ring buffer
// sample into it (pkg/structops.ReadTrace).
//
// Units are in the C comments, repeated here where a field is scaled.
// Fixed point (bpf/include/cc_fixed.h; pkg/model has the same constants):
// Subflow.Coupled, CCTrace.Coupled, CCTrace.AccBefore and AccAfter are Q32,
// signed: 2^32 is one packet of window (or 1.0 for a coupled quantity such
// as LIA's alpha). Nothing in the scheduler types is fixed point: times are
// microseconds, windows packets, sizes bytes, rates bytes per second.
//
// The package imports nothing of the project, so every package may use it.
package abi

// The congestion controls (cc_types.h).
type (
	// CCParams is struct mpcc_params, the value at key 0 of a congestion
	// control's params map: Lisa, Trace and Pacing are 0 or 1,
	// RsfTargetUs in microseconds, Algo the algorithm's id (pkg/algo).
	CCParams = abiMpccParams
	// Subflow is struct mpcc_subflow, the value of the subflows map: one
	// live subflow. Addresses in network order (IPv4 in the first 4
	// bytes), ports in host order; Cwnd, Ssthresh, InFlight, Delivered,
	// Lost and Retrans in packets; Coupled Q32; UpdatedNs CLOCK_MONOTONIC.
	Subflow = abiMpccSubflow
	// CCTrace is struct mpcc_trace_event, one record of the trace ring
	// buffer: a decision with every input it was made from.
	CCTrace = abiMpccTraceEvent
	// CCConn is struct mpcc_conn, the snapshot an algorithm decides from:
	// P[0] is the subflow acted on, P[1:N] its coupled siblings.
	CCConn = abiMpccConn
	// CCPath is struct mpcc_path, one path of a CCConn.
	CCPath = abiMpccPath
)

// Subflow.Flags (enum mpcc_subflow_flag).
const (
	SubflowMPTCP  = uint32(abiMpccSubflowFlagMPCC_F_MPTCP)
	SubflowBackup = uint32(abiMpccSubflowFlagMPCC_F_BACKUP)
	SubflowPaced  = uint32(abiMpccSubflowFlagMPCC_F_PACED) // the kernel paces the subflow
)

// CCTrace.Kind (enum mpcc_trace_kind) and CCTrace.Flags (enum
// mpcc_trace_flag).
const (
	TraceAvoid = uint32(abiMpccTraceKindMPCC_TRACE_AVOID) // a congestion-avoidance step
	TraceLoss  = uint32(abiMpccTraceKindMPCC_TRACE_LOSS)  // the window chosen after a loss
	TraceLISA  = uint32(abiMpccTraceKindMPCC_TRACE_LISA)  // a LISA donor repaid the window a joiner took
	// TraceReducing: a LISA repayment during a window reduction (CWR,
	// Recovery or Loss).
	TraceReducing = uint32(abiMpccTraceFlagMPCC_TRACE_F_REDUCING)
)

// The packet schedulers (sched_types.h).
type (
	// SchedParams is struct mpsch_params, the value at key 0 of a
	// scheduler's params map: Trace 0 or 1, Algo its id (pkg/algo),
	// Arg the algorithm's tunables (0: its default).
	SchedParams = abiMpschParams
	// SchedTrace is struct mpsch_trace, one record of the trace ring
	// buffer: a decision with everything it was made from.
	SchedTrace = abiMpschTrace
	// SchedConn is struct mpsch_conn, the connection at the moment of a
	// decision; Sf[:N] are its subflows.
	SchedConn = abiMpschConn
	// SchedSubflow is struct mpsch_sf, one subflow as a decision sees it.
	SchedSubflow = abiMpschSf
	// SchedState is struct mpsch_state, the words an algorithm keeps per
	// connection.
	SchedState = abiMpschState
	// SchedOut is struct mpsch_out, a decision: Mask bit i sends on Sf[i].
	SchedOut = abiMpschOut
	// SchedSubflowStats is struct mpsch_sf_stats, the value of a
	// scheduler's stats map: what it gave one subflow. Addresses in
	// network order (IPv4 in the first 4 bytes), ports in host order.
	SchedSubflowStats = abiMpschSfStats
)

// SchedSubflow.Flags (enum mpsch_sf_flag).
const (
	SchedSFActive    = uint32(abiMpschSfFlagSCHED_SF_ACTIVE)  // established, may send
	SchedSFBackup    = uint32(abiMpschSfFlagSCHED_SF_BACKUP)  // marked backup (MP_PRIO)
	SchedSFMemFree   = uint32(abiMpschSfFlagSCHED_SF_MEMFREE) // its send buffer takes more
	SchedSFSlowStart = uint32(abiMpschSfFlagSCHED_SF_SS)      // cwnd < ssthresh
)
