// SPDX-License-Identifier: Apache-2.0

package model

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(RSF{}, algo.Info{ID: 4, Summary: "Rent-seeking framework, delay-based (Pokhrel, Williamson)", Coupled: "delay_factor", Params: []string{"rsf_target"}})
}

// RSF mirrors bpf/cc/rsf.bpf.c.
type RSF struct{}

func (RSF) Name() string { return "rsf" }

// RSFFactor is f = min(1, (d - q) / q) clamped at 0, Q16.
func RSFFactor(p Path, d uint32) uint32 {
	var q uint32
	if p.MinRTTUs != 0 && p.SRTTUs > p.MinRTTUs {
		q = p.SRTTUs - p.MinRTTUs
	}
	if uint64(q)*2 <= uint64(d) {
		return ShareOne
	}
	if q >= d {
		return 0
	}
	return uint32((uint64(d-q) << ShareShift) / uint64(q))
}

func (RSF) Increase(c Conn) Out {
	s, _ := Shares(c)
	lia := LIATerm(c, s)
	f := RSFFactor(c.Paths[0], c.TargetUs)
	own := int64((uint64(f) * uint64(oneOverW(c.Paths[0].Cwnd))) >> ShareShift)
	inc := lia
	if own > lia {
		inc = own
	}
	return Out{Inc: inc, Coupled: int64(f) << (32 - ShareShift)}
}

func (RSF) Ssthresh(c Conn) Out { return Out{Ssthresh: renoSsthresh(c)} }
