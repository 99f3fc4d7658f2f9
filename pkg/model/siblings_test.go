// SPDX-License-Identifier: Apache-2.0

package model

import (
	"math/rand/v2"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
)

// siblingReads is what each algorithm's BPF reads of its siblings besides
// their windows and RTTs: MPCC_SIBLING_READS in bpf/cc/NAME.bpf.c
// (cc_conn.h). The snapshot leaves the rest 0, to spare cache lines of
// another CPU's socket on every ACK. An algorithm not listed reads every
// field (the default there) and is not checked.
var siblingReads = map[string]struct{ minRTT, lossBytes bool }{
	"lia":    {},
	"olia":   {lossBytes: true},
	"balia":  {},
	"rsf":    {},
	"wvegas": {},
}

// An algorithm decides the same whether or not the snapshot holds the
// siblings' fields its BPF does not read: if a model starts to read one,
// this fails until bpf/cc/NAME.bpf.c reads it too (and the entry above
// says so).
func TestSiblingReads(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 4))
	for _, i := range algo.All(algo.CC) {
		reads, ok := siblingReads[i.Name]
		if !ok {
			continue
		}
		m := Of(i)
		for k := 0; k < 20000; k++ {
			paths, _ := randPaths(r)
			full := conn(paths...)
			cut := conn(append([]Path(nil), paths...)...)
			for j := 1; j < len(cut.Paths); j++ {
				if !reads.minRTT {
					cut.Paths[j].MinRTTUs = 0
				}
				if !reads.lossBytes {
					cut.Paths[j].LossBytes = 0
				}
			}
			if a, b := m.Increase(full), m.Increase(cut); a != b {
				t.Fatalf("%s: increase %+v with the siblings' unread fields, %+v without; paths %+v", i.Name, a, b, paths)
			}
			if a, b := m.Ssthresh(full), m.Ssthresh(cut); a != b {
				t.Fatalf("%s: ssthresh %+v with the siblings' unread fields, %+v without; paths %+v", i.Name, a, b, paths)
			}
		}
	}
}

// liaFrac is bpf/include/cc_fixed.h's mpcc_lia_frac, mpcc_lia_term and
// mpcc_frac_le_one_over_w in uint64 as BPF computes them: the BPF finds
// the largest s^2 / w by cross-multiplying and divides once, and takes
// LIA's min(term, 1/w) without a second division when it can.
func liaFrac(c Conn, s []uint32) (term, capped int64) {
	num, den := uint64(0), uint64(1)
	for i, p := range c.Paths {
		w := uint64(max(p.Cwnd, 1))
		s2 := uint64(s[i]) * uint64(s[i])
		if s2*den > num*w {
			num, den = s2, w
		}
	}
	term = int64(num / den)
	w0 := uint64(max(c.Paths[0].Cwnd, 1))
	if num*w0 <= den<<32 {
		return term, term
	}
	return term, oneOverW(c.Paths[0].Cwnd)
}

// The BPF's one-division forms equal the model's per-path divisions,
// including at the bounds the cross-multiplication relies on (shares of 0
// and 1, windows of 0, 1 and 2^32-1: no product passes 2^64).
func TestLIAFracIsLIATerm(t *testing.T) {
	check := func(c Conn, s []uint32) {
		t.Helper()
		term, capped := liaFrac(c, s)
		want := LIATerm(c, s)
		wantCapped := min(want, oneOverW(c.Paths[0].Cwnd))
		if term != want || capped != wantCapped {
			t.Fatalf("shares %v, paths %+v: BPF's form %d (capped %d), the model's %d (capped %d)", s, c.Paths, term, capped, want, wantCapped)
		}
	}
	edges := []uint32{0, 1, 2, 3, 1 << 20, 1<<32 - 2, 1<<32 - 1}
	shares := []uint32{0, 1, 2, 32768, 65535, 65536}
	for _, w0 := range edges {
		for _, w1 := range edges {
			for _, s0 := range shares {
				for _, s1 := range shares {
					check(conn(Path{Cwnd: w0, SRTTUs: 1}, Path{Cwnd: w1, SRTTUs: 1}), []uint32{s0, s1})
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(31, 5))
	for k := 0; k < 100000; k++ {
		paths, _ := randPaths(r)
		c := conn(paths...)
		s, _ := Shares(c)
		check(c, s)
	}
}
