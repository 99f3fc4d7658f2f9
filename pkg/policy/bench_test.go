// SPDX-License-Identifier: Apache-2.0

package policy_test

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

type benchConfig struct {
	Conns int  `json:"conns"`
	TCP   bool `json:"tcp"`
}

type benchResult struct {
	Conns   int     `json:"conns"`
	Seconds float64 `json:"seconds"`
}

// runBench (helper side): a listener and a client in the helper's cgroup,
// over loopback in cfg.NS; cfg.Bench.Conns connections one after the other,
// each a one-byte exchange (so both ends are established) and a close.
func runBench(cfg helperConfig) (benchResult, error) {
	ln, err := testenv.ListenIn(cfg.NS, "127.0.0.1:0", !cfg.Bench.TCP)
	if err != nil {
		return benchResult{}, err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var b [1]byte
				if _, err := io.ReadFull(c, b[:]); err == nil {
					_, _ = c.Write(b[:])
				}
			}()
		}
	}()
	addr := ln.Addr().String()
	var res benchResult
	err = netns.Do(cfg.NS, func() error {
		d := net.Dialer{Timeout: 5 * time.Second}
		d.SetMultipathTCP(!cfg.Bench.TCP)
		start := time.Now()
		for i := 0; i < cfg.Bench.Conns; i++ {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return fmt.Errorf("connection %d: %w", i, err)
			}
			b := []byte{1}
			if _, err := c.Write(b); err != nil {
				c.Close()
				return err
			}
			if _, err := io.ReadFull(c, b); err != nil {
				c.Close()
				return err
			}
			c.Close()
		}
		res = benchResult{Conns: cfg.Bench.Conns, Seconds: time.Since(start).Seconds()}
		return nil
	})
	return res, err
}

// TestBenchPolicySetup measures what the policy program costs connection
// setup: short MPTCP connections over loopback, opened and accepted by a
// process in a cgroup with no policy, with a policy that leaves the CC as
// it is (the program runs, compares, changes nothing), with one that
// switches every subflow to reno, and with one that switches to a loaded
// BPF CC. Runs alternate, so drift on a shared machine hits all alike.
func TestBenchPolicySetup(t *testing.T) {
	testenv.Bench(t)
	ccRoot := testkernel.PinRoot(t)
	proot := filepath.Join(filepath.Dir(ccRoot), "mptcp-cc-policy")
	ns := testenv.Namespace(t, "mpcc-bench")
	for _, s := range []string{"net.ipv4.tcp_tw_reuse=1", "net.ipv4.ip_local_port_range=1024 65000", "net.mptcp.enabled=1"} {
		if err := netns.Exec(ns, "sysctl", "-qw", s); err != nil {
			t.Fatal(err)
		}
	}
	lia := testkernel.Load(t, ccRoot, "lia", cc.Params{})
	def := defaultCC(t, ns)

	type config struct {
		name, cc, cgroup string
		tcp              bool
		secs             []float64
	}
	configs := []*config{
		{name: "no policy"},
		{name: "policy, CC unchanged (" + def + ")", cc: def},
		{name: "policy -> reno", cc: "reno"},
		{name: "policy -> BPF lia", cc: lia},
		{name: "plain TCP, no policy", tcp: true},
		{name: "plain TCP, policy (MPTCP-only rule)", cc: lia, tcp: true},
	}
	for _, c := range configs {
		c.cgroup = newCgroup(t, "")
		if c.cc != "" {
			if err := policy.Attach(policy.Rule{Cgroup: c.cgroup, CC: c.cc}, proot); err != nil {
				t.Fatal(err)
			}
			cg := c.cgroup
			t.Cleanup(func() { _ = policy.Detach(cg, proot) })
		}
	}

	conns, rounds := 2000, 15
	runOnce := func(c *config) float64 {
		h := spawn(t, c.cgroup, helperConfig{Mode: "bench", NS: ns, Bench: benchConfig{Conns: conns, TCP: c.tcp}})
		res := h.next().Bench
		return float64(res.Conns) / res.Seconds
	}
	rates := make([][]float64, len(configs)) // [config][round]
	for i := range rates {
		rates[i] = make([]float64, rounds)
	}
	for r := 0; r < rounds; r++ {
		for i := range configs {
			k := (i + r) % len(configs) // a different order every round
			rates[k][r] = runOnce(configs[k])
		}
	}

	// What one run of the program costs, from the kernel's BPF run-time
	// statistics (enabled only for this extra pass: they slow every
	// program a little).
	nsPerRun := map[*config]float64{}
	runsPerConn := map[*config]float64{}
	if closer, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err != nil {
		t.Logf("BPF run-time statistics unavailable: %v", err)
	} else {
		for _, c := range configs {
			if c.cc == "" {
				continue
			}
			ids := programsOn(t, c.cgroup)
			if len(ids) != 1 {
				t.Fatalf("%s: programs %v", c.name, ids)
			}
			prog, err := ebpf.NewProgramFromID(ids[0])
			if err != nil {
				t.Fatal(err)
			}
			before, err1 := prog.Stats()
			runOnce(c)
			after, err2 := prog.Stats()
			prog.Close()
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if n := after.RunCount - before.RunCount; n > 0 {
				nsPerRun[c] = float64(after.Runtime-before.Runtime) / float64(n)
				runsPerConn[c] = float64(n) / float64(conns)
			}
		}
		closer.Close()
	}

	median := func(v []float64) float64 {
		v = append([]float64(nil), v...)
		sort.Float64s(v)
		return v[len(v)/2]
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(&b, "connection setup: %d connections per run x %d rounds, loopback, client and server in the cgroup\n", conns, rounds)
	fmt.Fprintln(tw, "CONFIG\tCONN/S MEDIAN\tMIN\tMAX\tVS BASELINE (MEDIAN OF ROUNDS)\tBPF RUNS/CONN\tNS/RUN\tBPF NS/CONN\tSHARE OF SETUP")
	baseline := map[bool]int{}
	for i, c := range configs {
		if c.cc == "" {
			baseline[c.tcp] = i
		}
	}
	for i, c := range configs {
		ratios := make([]float64, rounds)
		for r := range ratios {
			ratios[r] = rates[i][r] / rates[baseline[c.tcp]][r]
		}
		sorted := append([]float64(nil), rates[i]...)
		sort.Float64s(sorted)
		runs, ns, perConn, share := "-", "-", "-", "-"
		if v, ok := nsPerRun[c]; ok {
			total := v * runsPerConn[c]
			runs, ns, perConn = fmt.Sprintf("%.1f", runsPerConn[c]), fmt.Sprintf("%.0f", v), fmt.Sprintf("%.0f", total)
			share = fmt.Sprintf("%.2f%%", 100*total/(1e9/median(rates[i])))
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.3f\t%s\t%s\t%s\t%s\n", c.name, median(rates[i]), sorted[0], sorted[len(sorted)-1], median(ratios), runs, ns, perConn, share)
	}
	tw.Flush()
	t.Log("\n" + b.String())
	fmt.Print(b.String())
}
