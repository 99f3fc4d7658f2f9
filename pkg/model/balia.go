// SPDX-License-Identifier: Apache-2.0

package model

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(BALIA{}, algo.Info{ID: 3, Summary: "Balanced Linked Adaptation (Peng et al.)", Coupled: "alpha"})
}

// BALIA mirrors bpf/cc/balia.bpf.c.
type BALIA struct{}

func (BALIA) Name() string { return "balia" }

const baliaACap = uint32(3) << 15 // 1.5 in Q16

func baliaA(s0, smax uint32) int64 {
	if s0 == 0 {
		return int64(baliaACap) << 16
	}
	return int64((uint64(smax) << 32) / uint64(s0))
}

func (BALIA) Increase(c Conn) Out {
	s, sm := Shares(c)
	s0 := uint64(s[0])
	num := 4*s0*s0 + 5*s0*uint64(sm) + uint64(sm)*uint64(sm)
	return Out{Inc: int64(div(num, 10*uint64(c.Paths[0].Cwnd))), Coupled: baliaA(s[0], sm)}
}

func (BALIA) Ssthresh(c Conn) Out {
	s, sm := Shares(c)
	a16 := baliaACap
	if s[0] != 0 {
		a16 = uint32((uint64(sm) << 16) / uint64(s[0]))
	}
	if a16 > baliaACap {
		a16 = baliaACap
	}
	w := c.Paths[0].Cwnd
	cut := (uint64(w) * uint64(a16)) >> 17
	ss := uint32(2)
	if uint64(w) > cut+2 {
		ss = w - uint32(cut)
	}
	return Out{Ssthresh: ss, Coupled: baliaA(s[0], sm)}
}
