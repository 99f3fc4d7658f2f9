// SPDX-License-Identifier: Apache-2.0

// Package model is the Go reference of every congestion control in bpf/cc/: the
// same integer arithmetic, step for step, so that a decision the BPF program
// recorded can be replayed here and must come out bit-identical (the
// differential tests in pkg/cc do that on real connections).
//
// Each algorithm is one file, NAME.go, whose init registers it in
// pkg/algo's table (name, id, summary, coupled quantity, parameters, this
// model): the one place an algorithm is declared in Go.
//
// Fixed-point scales (defined in bpf/include/cc_fixed.h, explained in
// docs/algorithms.md):
//
//	rate   x = min(cwnd, 2^20) << 27 / srtt_us
//	share  s = x << 16 / sum(x)              Q16, 65536 == 1
//	inc, coupled quantities                  Q32, 2^32 == one packet (or 1.0)
//
// reference.go holds the same formulas in float64, straight from the papers,
// to check that the fixed point is faithful.
package model

import (
	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
)

// Fixed-point constants, as in bpf/include/cc_fixed.h.
const (
	One        = int64(1) << 32
	ShareShift = 16
	ShareOne   = uint32(1) << ShareShift
	RateShift  = 27
	CwndCap    = uint32(1) << 20
)

// MaxPaths is MPCC_MAX_PATHS: the paths of a snapshot (struct mpcc_conn).
const MaxPaths = len(abi.CCConn{}.P)

// Path is one coupled subflow as the algorithms see it (struct mpcc_path).
type Path struct {
	Cwnd      uint32 // packets
	SRTTUs    uint32 // smoothed RTT, microseconds (>= 1 from the kernel)
	MinRTTUs  uint32
	LossBytes uint64 // OLIA's l_r
}

// Conn is the snapshot an algorithm decides from (struct mpcc_conn):
// Paths[0] is the subflow acted on.
type Conn struct {
	Paths    []Path
	TargetUs uint32 // RSF's target queueing delay
}

// Out is what an algorithm returns (struct mpcc_out).
type Out struct {
	Inc      int64  // cwnd increase per ACKed packet, Q32
	Coupled  int64  // the algorithm's coupled quantity, Q32
	Ssthresh uint32 // window after a loss, packets
}

// Algorithm is one congestion control's pair of hooks.
type Algorithm interface {
	Name() string
	Increase(c Conn) Out
	Ssthresh(c Conn) Out
}

// register adds m's congestion control to the table (pkg/algo), named
// by m.Name(), from the init of m's file: the one place an algorithm is
// declared. i.ID is stable once shipped (pkg/algo says why).
func register(m Algorithm, i algo.Info) {
	i.Name, i.Kind = m.Name(), algo.CC
	i.Model = func() Algorithm { return m }
	algo.Register(i)
}

// Of returns the model of a congestion control of the table.
func Of(i algo.Info) Algorithm { return i.Model.(func() Algorithm)() }

// div is BPF's unsigned division: dividing by zero gives zero.
func div(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Rate is mpcc_rate.
func Rate(p Path) uint64 {
	w := p.Cwnd
	if w > CwndCap {
		w = CwndCap
	}
	return div(uint64(w)<<RateShift, uint64(p.SRTTUs))
}

// Shares is mpcc_shares: each path's share of the summed rate (Q16), and the
// largest share.
func Shares(c Conn) ([]uint32, uint32) {
	x := make([]uint64, len(c.Paths))
	var sum uint64
	for i, p := range c.Paths {
		x[i] = Rate(p)
		sum += x[i]
	}
	s := make([]uint32, len(c.Paths))
	var smax uint32
	for i := range c.Paths {
		if sum != 0 {
			s[i] = uint32((x[i] << ShareShift) / sum)
		} else {
			s[i] = ShareOne
		}
		if s[i] > smax {
			smax = s[i]
		}
	}
	return s, smax
}

func share2OverW(s, w uint32) int64 {
	if w == 0 {
		w = 1
	}
	return int64(uint64(s) * uint64(s) / uint64(w))
}

func oneOverW(w uint32) int64 {
	if w == 0 {
		w = 1
	}
	return One / int64(w)
}

// LIATerm is mpcc_lia_term: max_k s_k^2 / w_k, RFC 6356's alpha / w_total.
// The BPF finds the largest quotient by cross-multiplying and divides only
// it (cc_fixed.h); TestLIAFracIsLIATerm holds the two equal.
func LIATerm(c Conn, s []uint32) int64 {
	var best int64
	for i, p := range c.Paths {
		if t := share2OverW(s[i], p.Cwnd); t > best {
			best = t
		}
	}
	return best
}

func renoSsthresh(c Conn) uint32 {
	w := c.Paths[0].Cwnd >> 1
	if w > 2 {
		return w
	}
	return 2
}

// Subflow is the per-subflow state cong_avoid changes.
type Subflow struct {
	Cwnd, Ssthresh, Clamp uint32
	Acc                   int64 // Q32 fraction of a packet not yet in Cwnd
}

// AvoidStep is mpcc_cong_avoid for a cwnd-limited ACK of `acked` packets:
// Reno slow start up to ssthresh, then the algorithm's increase for what is
// left, through the Q32 accumulator. conn must be the snapshot taken after
// the slow-start part (its Paths[0].Cwnd is the window at that point).
// It returns the new state and whether the algorithm was consulted.
func AvoidStep(a Algorithm, st Subflow, acked uint32, conn Conn) (Subflow, Out, bool) {
	if st.Cwnd < st.Ssthresh {
		cwnd := st.Cwnd + acked
		if cwnd > st.Ssthresh {
			cwnd = st.Ssthresh
		}
		acked -= cwnd - st.Cwnd
		if cwnd > st.Clamp {
			cwnd = st.Clamp
		}
		st.Cwnd = cwnd
		if acked == 0 {
			return st, Out{}, false
		}
	}
	o := a.Increase(conn)
	st.Acc += o.Inc * int64(acked)
	if delta := st.Acc >> 32; delta != 0 {
		st.Acc -= delta << 32
		cwnd := int64(st.Cwnd) + delta
		if cwnd < 1 {
			cwnd = 1
		}
		if cwnd > int64(st.Clamp) {
			cwnd = int64(st.Clamp)
		}
		st.Cwnd = uint32(cwnd)
		// A coupled decrease stays in congestion avoidance (see mpcc_cong_avoid in bpf/include/cc_skel.h).
		if delta < 0 && st.Ssthresh > st.Cwnd {
			st.Ssthresh = st.Cwnd
		}
	}
	return st, o, true
}
