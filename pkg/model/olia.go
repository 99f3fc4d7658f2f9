// SPDX-License-Identifier: Apache-2.0

package model

import "github.com/mptcp-cc/mptcp-cc/pkg/algo"

func init() {
	register(OLIA{}, algo.Info{ID: 2, Summary: "Opportunistic Linked Increases (Khalili et al.)", Coupled: "alpha"})
}

// OLIA mirrors bpf/cc/olia.bpf.c.
type OLIA struct{}

func (OLIA) Name() string { return "olia" }

// OLIAMetric is l_r / rtt_r^2 on the BPF's common scale.
func OLIAMetric(p Path) uint64 {
	l := p.LossBytes
	if l > 1<<40 {
		l = 1 << 40
	}
	t := div(l<<22, uint64(p.SRTTUs))
	if t < 1<<40 {
		return div(t<<20, uint64(p.SRTTUs))
	}
	return div(t, uint64(p.SRTTUs)) << 20
}

// OLIAAlpha returns alpha_r of Paths[0], Q32.
func OLIAAlpha(c Conn) int64 {
	n := uint32(len(c.Paths))
	m := make([]uint64, n)
	var best uint64
	var wmax uint32
	for i, p := range c.Paths {
		m[i] = OLIAMetric(p)
		if m[i] > best {
			best = m[i]
		}
		if p.Cwnd > wmax {
			wmax = p.Cwnd
		}
	}
	var nm, nbm uint32 // |M| and |B \ M|
	for i, p := range c.Paths {
		if p.Cwnd == wmax {
			nm++
		} else if m[i] == best {
			nbm++
		}
	}
	selfB, selfM := m[0] == best, c.Paths[0].Cwnd == wmax
	switch {
	case nbm == 0:
		return 0
	case selfB && !selfM:
		return One / int64(n*nbm)
	case selfM:
		return -(One / int64(n*nm))
	}
	return 0
}

func (OLIA) Increase(c Conn) Out {
	s, _ := Shares(c)
	alpha := OLIAAlpha(c)
	num := int64(uint64(s[0])*uint64(s[0])) + alpha
	w := uint64(c.Paths[0].Cwnd)
	var inc int64
	if num >= 0 {
		inc = int64(div(uint64(num), w))
	} else {
		inc = -int64(div(uint64(-num), w))
	}
	return Out{Inc: inc, Coupled: alpha}
}

func (OLIA) Ssthresh(c Conn) Out { return Out{Ssthresh: renoSsthresh(c)} }
