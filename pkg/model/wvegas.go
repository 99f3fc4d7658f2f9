// SPDX-License-Identifier: Apache-2.0

package model

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(WVegas{}, algo.Info{ID: 5, Summary: "Weighted Vegas, delay-based (Cao, Xu, Fu)", Coupled: "alpha", DelayBased: true})
}

// Constants of bpf/cc/wvegas.bpf.c, in packets.
const (
	WVegasTotalAlpha = 10 // the backlog the whole connection keeps queued
	WVegasMinAlpha   = 2  // every subflow's floor
)

// WVegas mirrors bpf/cc/wvegas.bpf.c.
type WVegas struct{}

func (WVegas) Name() string { return "wvegas" }

// WVegasAlpha is the subflow's target backlog, max(2, s * 10) whole
// packets, from its rate share s (Q16).
func WVegasAlpha(share uint32) uint32 {
	return max(uint32((uint64(share)*WVegasTotalAlpha)>>ShareShift), WVegasMinAlpha)
}

// WVegasDiff is Vegas's backlog estimate w * (srtt - min RTT) / srtt in
// whole packets; 0 without a min RTT or when srtt is not above it.
func WVegasDiff(p Path) uint64 {
	if p.MinRTTUs == 0 || p.SRTTUs <= p.MinRTTUs {
		return 0
	}
	return uint64(p.Cwnd) * uint64(p.SRTTUs-p.MinRTTUs) / uint64(p.SRTTUs)
}

func (WVegas) Increase(c Conn) Out {
	if len(c.Paths) == 1 { // Reno, as every CC here, and no target in force
		return Out{Inc: oneOverW(c.Paths[0].Cwnd)}
	}
	s, _ := Shares(c)
	p := c.Paths[0]
	alpha := WVegasAlpha(s[0])
	diff := WVegasDiff(p)
	o := Out{Coupled: int64(alpha) << 32}
	switch {
	case diff < uint64(alpha):
		o.Inc = oneOverW(p.Cwnd)
	case diff == uint64(alpha):
		o.Inc = 0
	case uint64(p.SRTTUs) >= 2*uint64(p.MinRTTUs):
		// The queue is at least the base RTT: the out-of-tree kernel's cut
		// to w * base / (2 rtt), spread over the round's w ACKs.
		o.Inc = -(One - int64((uint64(p.MinRTTUs)<<31)/uint64(p.SRTTUs)))
	default:
		o.Inc = -oneOverW(p.Cwnd)
	}
	return o
}

func (WVegas) Ssthresh(c Conn) Out { return Out{Ssthresh: renoSsthresh(c)} }
