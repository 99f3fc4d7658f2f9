// SPDX-License-Identifier: Apache-2.0

package pathctl_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
	"github.com/mptcp-cc/mptcp-cc/lab/schedexp"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// TestBenchPreferLatency is the closest thing to DAPS (seed 001) on a
// stock kernel: on the seed's case 3 (1.5 Mbit/s at 20 ms beside 0.5 Mbit/s
// at 200 ms, queues of one BDP but at least 10 packets), an application
// paced at 80% of the fast path - its rate fits that path - sends 4 MiB,
// and the server's capture gives every record's receive-buffer blocking
// time. Side by side in one run: the default scheduler alone, with the
// path controller as it is by default (the held mode keeps a tie), and
// with --prefer latency (a tie goes to best-path mode). The controller
// runs per endpoint (the in-kernel path manager's endpoint of path 1).
//
// PATHCTL_BENCH="reps=N" (default 2).
func TestBenchPreferLatency(t *testing.T) {
	testenv.Bench(t)
	reps, _, _ := benchEnv(t)
	c := schedexp.DAPSCases[2]
	cr, err := schedexp.NewCaseResult(c.N, "bdp")
	if err != nil {
		t.Fatal(err)
	}
	arms := []struct {
		name string
		cfg  *pathctl.Config
	}{{"default", nil}, {"controller", &pathctl.Config{}}, {"controller, prefer latency", &pathctl.Config{PreferBestPath: true}}}
	rows := map[string][]string{}
	for r := 1; r <= reps; r++ {
		for _, arm := range arms {
			n := testkernel.Net(t, topo.Config{
				Paths:       []int{0, 1},
				Bottlenecks: cr.Bottlenecks(),
				Subflows:    true,
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			if arm.cfg != nil {
				go func() { done <- controlFirst(ctx, t, n.Client, *arm.cfg) }()
			} else {
				done <- nil
			}
			res, err := blocking.Run(blocking.Options{
				ServerNS: n.Server, ClientNS: n.Client,
				Listen: netip.AddrPortFrom(topo.ServerAddr, 0), Local: topo.ClientAddr(0), MPTCP: true,
				CC:   "cubic",
				Send: blocking.SendOptions{Bytes: 4 << 20, RateBits: 0.8 * c.C0},
			})
			cancel()
			if cerr := <-done; cerr != nil && cerr != context.Canceled {
				t.Errorf("controller: %v", cerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			slow := 0.0
			if len(res.SubflowBytes) == 2 && res.SubflowBytes[0]+res.SubflowBytes[1] > 0 {
				slow = float64(res.SubflowBytes[1]) / float64(res.SubflowBytes[0]+res.SubflowBytes[1])
			}
			t.Logf("%s run %d: blocking %+v; delay mean %.0f ms; %.2f Mbit/s; %.0f%% on the slow path",
				arm.name, r, res.Blocking, res.Delay.Mean, res.Goodput/1e6, 100*slow)
			rows[arm.name] = append(rows[arm.name], fmt.Sprintf("| %s | %d | %.1f | %.1f | %.1f | %.0f / %.0f | %.2f | %.0f%% |",
				arm.name, r, res.Blocking.Mean, res.Blocking.P95, res.Blocking.Max, res.Delay.Mean, res.Delay.P95, res.Goodput/1e6, 100*slow))
		}
	}
	var all []string
	for _, arm := range arms {
		all = append(all, rows[arm.name]...)
	}
	t.Logf("\n| arm | run | blocking mean (ms) | p95 | max | delay mean / p95 (ms) | goodput (Mbit/s) | on the slow path |\n|---|---|---|---|---|---|---|---|\n%s", strings.Join(all, "\n"))
}

// controlFirst waits for the first MPTCP connection from path 0 in ns and
// runs the path controller on it until ctx ends.
func controlFirst(ctx context.Context, t *testing.T, ns string, cfg pathctl.Config) error {
	for {
		socks, err := sockdiag.Dump(ns, 2, sockdiag.StateSet(sockdiag.Established))
		if err != nil {
			return err
		}
		for _, k := range socks {
			if k.MPTCP && k.Token != 0 && k.Local.Addr().Unmap() == topo.ClientAddr(0) {
				return pathctl.Run(ctx, pathctl.Options{NS: ns, Token: k.Token, Apply: pathctl.PerEndpoint, Config: cfg, Event: logEvents(t)})
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
