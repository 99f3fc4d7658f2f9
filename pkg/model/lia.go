// SPDX-License-Identifier: Apache-2.0

package model

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(LIA{}, algo.Info{ID: 1, Summary: "Linked Increases, RFC 6356", Coupled: "alpha"})
}

// LIA mirrors bpf/cc/lia.bpf.c.
type LIA struct{}

func (LIA) Name() string { return "lia" }

func (LIA) Increase(c Conn) Out {
	s, _ := Shares(c)
	inc := LIATerm(c, s)
	var wsum uint32
	for _, p := range c.Paths {
		wsum += p.Cwnd
	}
	o := Out{Coupled: inc * int64(wsum)}
	if limit := oneOverW(c.Paths[0].Cwnd); inc > limit {
		inc = limit
	}
	o.Inc = inc
	return o
}

func (LIA) Ssthresh(c Conn) Out { return Out{Ssthresh: renoSsthresh(c)} }
