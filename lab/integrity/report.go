// SPDX-License-Identifier: Apache-2.0

package integrity

// A run's report: the rates with their confidence intervals, and the text
// docs/kernel-faults.md quotes. Apart from the run so that the numbers and
// their wording are read in one place.

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// Wilson is the proportion k/n and its 95% Wilson score interval.
func Wilson(k, n int) (p, lo, hi float64) {
	if n == 0 {
		return 0, 0, 1
	}
	const z = 1.959964
	nf := float64(n)
	p = float64(k) / nf
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return p, max(0, mid-half), min(1, mid+half)
}

// WriteText prints the report as a table of rates, then where the wrong
// bytes of each arm began and where they had been sent.
func (rep Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "kernel %s; %d-byte connections, %d at a time, over two unshaped veth paths, offloads off and a join each unless the arm says +offload or +nojoin\n\n", rep.Kernel, rep.Size, rep.Parallel)
	fmt.Fprintf(w, "%-14s %7s %6s %24s %7s %7s %15s %8s\n", "arm", "conns", "wrong", "per 10,000 (95% CI)", "failed", "joins", "flagged (wrong)", "took")
	for _, a := range rep.Arms {
		rate, lo, hi := a.Rate()
		fmt.Fprintf(w, "%-14s %7d %6d %24s %7d %7d %15s %8s\n", a.Name, a.Conns, a.Wrong,
			fmt.Sprintf("%.1f (%.1f-%.1f)", rate, lo, hi), a.Failed, a.Joins,
			flagged(a), a.Took.Round(100*time.Millisecond))
	}
	fmt.Fprintf(w, "\nflagged: connections during which a MIB counter of something amiss moved (%s); only measured when connections run one at a time\n", strings.Join(kernel.MPTCPAnomalies, ", "))
	for _, a := range rep.Arms {
		if a.Wire {
			fmt.Fprintf(w, "%s: the server's capture checked %d good connections on the wire, %d right (every segment as its DSS mapping says, every byte there); %d packets dropped by the capture\n",
				a.Name, a.WireChecked, a.WireRight, a.CaptureDrops)
			if a.WireOdd != nil {
				fmt.Fprintf(w, "  the first good connection not found right: %s\n", a.WireOdd.describe())
			}
		}
	}
	for _, a := range rep.Arms {
		if len(a.Findings) == 0 && len(a.Errors) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", a.Name)
		if csum := a.MIB["DataCsumErr"]; csum > 0 {
			fmt.Fprintf(w, "  DSS checksum errors: %d\n", csum)
		}
		for _, e := range a.Errors {
			fmt.Fprintf(w, "  failed: %s\n", e)
		}
		for _, f := range a.Findings {
			where := f.Origin()
			if d, ok := f.Shift(); ok {
				where += fmt.Sprintf(" (%+d bytes away)", d)
			}
			fmt.Fprintf(w, "  connection %d: first wrong byte at payload offset %d; %d wrong, the first stretch %d long; %s; counters %s\n",
				f.Conn, f.Offset, f.Wrong, f.Run, where, counters(f.Counters))
			if f.Wire != nil {
				fmt.Fprintf(w, "    %s\n", f.Wire.describe())
			}
		}
	}
}

func counters(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	return b.String()
}

func flagged(a ArmResult) string {
	if !a.Attributed {
		return "n/a (parallel)"
	}
	return fmt.Sprintf("%d (%d)", a.Flagged, a.WrongFlagged)
}
