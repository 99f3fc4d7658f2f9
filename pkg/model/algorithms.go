// SPDX-License-Identifier: Apache-2.0

package model

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
