// SPDX-License-Identifier: Apache-2.0

package schedexp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
	"github.com/mptcp-cc/mptcp-cc/lab/schedexp"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// StockEnv configures TestBenchDAPSStock: schedexp.ParseSpec's keys reps,
// cases, bytes, queue and out (the arms are fixed; both sender regimes run).
const StockEnv = "DAPS_STOCK"

// stockArm is one lever a user of a stock kernel has, under the kernel's
// own (default) scheduler.
type stockArm struct {
	name   string
	cc     string // cubic, or lia / lia+pacing: ours, loaded by the test
	backup bool   // the slow path's endpoint is flagged backup
}

var stockArms = []stockArm{
	{name: "default", cc: "cubic"},
	{name: "default+backup", cc: "cubic", backup: true},
	{name: "lia", cc: "lia"},
	{name: "lia+pacing", cc: "lia+pacing"},
}

// Seed 001 on the host's kernel (no scheduler hook), issue 9's question:
// does a lever on our side cut receive-buffer blocking on the seed's
// asymmetric paths under the kernel's default scheduler? The levers: the
// path controller's backup flag on the slow path (the default scheduler
// then leaves it idle while the fast one can send), and our coupled CC with
// and without pacing (the default scheduler picks the subflow whose queue
// drains soonest at its pacing rate, so pacing changes what it sees); cubic
// under the default scheduler is the baseline the VM's runs had. Every run
// has a fresh network; the arms alternate within each repetition, so they
// share the host's noise. Writes daps-stock-bulk and daps-stock-paced80
// (JSON and markdown) to lab-results/sched (or out=).
func TestBenchDAPSStock(t *testing.T) {
	testenv.Bench(t)
	testenv.RequireRoot(t)
	if vmtest.InGuest() {
		t.Skip("a host experiment")
	}
	spec, err := schedexp.ParseSpec(os.Getenv(StockEnv))
	if err != nil {
		t.Fatal(err)
	}
	out := outDir(spec)
	reps := spec.RepsOr(3)
	root := testkernel.PinRoot(t)
	ccs := map[string]string{
		"cubic":      "cubic",
		"lia":        testkernel.Load(t, root, "lia", cc.Params{}),
		"lia+pacing": testkernel.Load(t, root, "lia", cc.Params{Pacing: true}),
	}
	var arms []string
	for _, a := range stockArms {
		arms = append(arms, a.name)
	}

	regimes := []struct {
		name string
		pace float64
	}{{"bulk", 0}, {"paced80", 0.8}}
	results := make([]schedexp.DAPSResult, len(regimes))
	for i, rg := range regimes {
		results[i] = schedexp.DAPSResult{Meta: schedexp.Meta{Kernel: kernel.Release()}, Bytes: spec.Bytes,
			RecordSize: blocking.DefaultRecordSize, Queue: spec.Queue, Pace: rg.pace}
		for _, n := range spec.Cases {
			cr, err := schedexp.NewCaseResult(n, spec.Queue)
			if err != nil {
				t.Fatal(err)
			}
			results[i].Cases = append(results[i].Cases, cr)
		}
	}
	for rep := 1; rep <= reps; rep++ {
		for ci := range spec.Cases {
			for ri, rg := range regimes {
				cr := &results[ri].Cases[ci]
				c := schedexp.DAPSCases[cr.Case-1]
				for _, arm := range stockArms {
					t.Run(fmt.Sprintf("case%d/%s/%s/%d", cr.Case, rg.name, arm.name, rep), func(t *testing.T) {
						net := testkernel.Net(t, topo.Config{
							Paths:       []int{0, 1},
							Bottlenecks: cr.Bottlenecks(),
							Subflows:    true,
							Backup:      []bool{false, arm.backup},
						})
						r := transfer(t, net, 0, blocking.Options{
							CC:   ccs[arm.cc],
							Send: blocking.SendOptions{Bytes: spec.Bytes, RateBits: rg.pace * (c.C0 + c.C1)},
						})
						if r.Subflows != 2 {
							t.Fatalf("%d subflows, want one per path", r.Subflows)
						}
						t.Logf("case %d %s %s rep %d: blocking %+v (model %v); delay mean %.0f ms; %.2f Mbit/s",
							cr.Case, rg.name, arm.name, rep, r.Blocking, c.Model(), r.Delay.Mean, r.Goodput/1e6)
						cr.Runs = append(cr.Runs, schedexp.NewRun(arm.name, rep, r, true))
					})
				}
			}
		}
	}
	for i, rg := range regimes {
		for ci := range results[i].Cases {
			results[i].Cases[ci].Schedulers = schedexp.Pool(results[i].Cases[ci].Runs, arms)
		}
		md := results[i].Markdown()
		if err := schedexp.Write(out, "daps-stock-"+rg.name, results[i], md); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (%s):\n%s", rg.name, filepath.Join(out, "daps-stock-"+rg.name+".json"), md)
	}
}
