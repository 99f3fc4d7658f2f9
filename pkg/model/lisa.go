// SPDX-License-Identifier: Apache-2.0

package model

// LISARepay is mpcc_lisa_pay (bpf/include/cc_lisa.h): the window and
// ssthresh of a donor after it gives up debt packets to a joining sibling.
// lossWindow is the window the current reduction started from (the
// kernel's prior_cwnd); reducing says the subflow is in, or entering, CWR,
// Recovery or Loss. Repayment never grows the window and never raises
// ssthresh; during a reduction ssthresh shrinks by the debt's share of the
// loss window, so the reduction applies to what the donor kept.
func LISARepay(cwnd, ssthresh, debt, lossWindow uint32, reducing bool) (uint32, uint32) {
	w, ss := cwnd, ssthresh
	if w > debt+2 {
		w -= debt
	} else if w > 2 {
		w = 2
	}
	if reducing {
		scaled := uint32(2)
		if lossWindow > debt {
			scaled = uint32(uint64(ss) * uint64(lossWindow-debt) / uint64(lossWindow))
		}
		scaled = max(scaled, 2)
		ss = min(ss, scaled)
	} else if cwnd >= ss && w < ss {
		ss = w
	}
	return w, ss
}
