// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// TestBenchChecksum (make bench) measures what MPTCP's DSS checksums
// (net.mptcp.checksum_enabled=1, on both ends) cost: goodput and CPU per
// gigabyte of a two-subflow connection over unshaped veth, where the
// machine's CPU is the bottleneck (the worst case: below the CPU's limit
// goodput does not change and the CPU per byte is the cost), with the
// kernel's Reno and with LIA. Checksums on and off alternate round after
// round; each round's on/off ratio is taken, and the table reports their
// median with its 95% interval (docs/troubleshooting.md quotes it).
// CHECKSUM="rounds=N" sets the rounds (default 5).
func TestBenchChecksum(t *testing.T) {
	testenv.Bench(t)
	const runFor = 5 * time.Second
	rounds := 5
	if v, ok := strings.CutPrefix(os.Getenv("CHECKSUM"), "rounds="); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CHECKSUM rounds=%q: want a positive number", v)
		}
		rounds = n
	}
	root := testkernel.PinRoot(t)
	n := testkernel.TwoPaths(t, 0)
	lia := testkernel.Load(t, root, "lia", cc.Params{})
	srv, err := xfer.ListenWith(n.Server, netip.AddrPortFrom(topo.ServerAddr, 0), true, xfer.ServerOptions{NoVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	setChecksum := func(on bool) {
		v := "0"
		if on {
			v = "1"
		}
		for _, ns := range []string{n.Client, n.Server} {
			if err := netns.Exec(ns, "sysctl", "-q", "-w", "net.mptcp.checksum_enabled="+v); err != nil {
				t.Fatal(err)
			}
		}
	}
	type arm struct {
		cc string
		on bool
	}
	gbps := map[arm][]float64{}
	cpu := map[arm][]float64{}
	ccs := []string{"reno", lia}
	for r := 0; r < rounds; r++ {
		for i := range 4 {
			a := arm{ccs[(i+r)%4/2], (i+r)%2 == 1}
			setChecksum(a.on)
			busy0 := cpuBusy(t)
			res, err := testkernel.Run(n, srv, xfer.Options{CC: a.cc, For: runFor})
			busy1 := cpuBusy(t)
			if err != nil || res.Delivered == 0 {
				t.Fatalf("%+v: %v %+v", a, err, res)
			}
			gb := float64(res.Delivered) / 1e9
			gbps[a] = append(gbps[a], gb*8/res.Duration.Seconds())
			cpu[a] = append(cpu[a], (busy1-busy0)/gb)
		}
	}
	setChecksum(false)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d rounds x %v, 2 subflows over unshaped veth (CPU-bound): DSS checksums on against off, medians of each round's ratio with 95%% intervals\n", rounds, runFor)
	fmt.Fprintf(&b, "%-8s %14s %14s %26s %26s\n", "cc", "Gbit/s off", "Gbit/s on", "goodput on/off (95% CI)", "CPU per GB on/off (95% CI)")
	for _, c := range ccs {
		off, on := arm{c, false}, arm{c, true}
		gLo, gMed, gHi := medianCI(roundRatios(gbps[on], gbps[off]))
		cLo, cMed, cHi := medianCI(roundRatios(cpu[on], cpu[off]))
		label := c
		if c == lia {
			label = "lia"
		}
		fmt.Fprintf(&b, "%-8s %14.2f %14.2f %26s %26s\n", label, median(gbps[off]), median(gbps[on]),
			fmt.Sprintf("%.1f%% (%.1f-%.1f)", 100*gMed, 100*gLo, 100*gHi), fmt.Sprintf("%.1f%% (%.1f-%.1f)", 100*cMed, 100*cLo, 100*cHi))
	}
	t.Log(b.String())
}
