// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/model"
)

// Differential test: the BPF programs record every decision together with
// the inputs they took it from (the trace ring buffer); the Go model, fed the
// same inputs, must reach bit-identical windows, accumulators and coupled
// quantities. Real connections, so the inputs are what the kernel really
// saw: two-subflow MPTCP on lossy, queue-limited paths (losses, avoidance,
// the coupled paths) and a plain TCP flow (one path: Reno).
func TestBPFMatchesModel(t *testing.T) {
	root := testkernel.PinRoot(t)
	n := testkernel.Net(t, topo.Config{
		Paths: []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: 10e6, Delay: 5 * time.Millisecond, QueueBytes: 20 * 1500, Loss: 0.005, Seed: 7},
			{RateBits: 5e6, Delay: 15 * time.Millisecond, QueueBytes: 20 * 1500, Seed: 8},
		},
		Subflows: true,
	})
	for _, a := range cc.Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			name, tr := loadTraced(t, root, a.Name)
			run(t, n, []flow{{path: 0, mptcp: true, cc: name}, {path: 1, cc: name}}, time.Second, 3*time.Second, nil)
			events, err := tr.Stop()
			if err != nil {
				t.Fatal(err)
			}
			checkTrace(t, model.Of(a.Info), events)
		})
	}
}

// loadTraced loads algo with every decision traced (RSF's target at 3 ms, so
// its delay factor varies on these short paths) and starts reading the trace.
func loadTraced(t *testing.T, root, algo string) (string, *cc.TraceReader) {
	t.Helper()
	return loadTracedParams(t, root, algo, cc.Params{Trace: true, RSFTarget: 3 * time.Millisecond})
}

func loadTracedParams(t *testing.T, root, algo string, p cc.Params) (string, *cc.TraceReader) {
	t.Helper()
	name := testkernel.Load(t, root, algo, p)
	tr, err := cc.ReadTrace(root, name)
	if err != nil {
		t.Fatal(err)
	}
	return name, tr
}

func checkTrace(t *testing.T, alg model.Algorithm, events []cc.TraceEvent) {
	t.Helper()
	var avoid, loss, coupled, single, negative int
	for i, e := range events {
		if e.Kind == cc.TraceLISA {
			checkLISARepay(t, i, e)
			continue
		}
		if e.Conn.N == 0 || int(e.Conn.N) > model.MaxPaths {
			t.Fatalf("event %d: %d paths", i, e.Conn.N)
		}
		c := model.Conn{TargetUs: e.Conn.TargetUs}
		for _, p := range e.Conn.P[:e.Conn.N] {
			c.Paths = append(c.Paths, model.Path{Cwnd: p.Cwnd, SRTTUs: p.SrttUs, MinRTTUs: p.MinRttUs, LossBytes: p.LossBytes})
		}
		switch e.Kind {
		case cc.TraceAvoid:
			avoid++
			in := model.Subflow{Cwnd: e.CwndBefore, Ssthresh: e.Ssthresh, Clamp: e.Clamp, Acc: e.AccBefore}
			out, o, used := model.AvoidStep(alg, in, e.Acked, c)
			if !used {
				t.Fatalf("event %d: the model did not reach avoidance: %+v", i, e)
			}
			if out.Cwnd != e.CwndAfter || out.Acc != e.AccAfter || o.Coupled != e.Coupled || out.Ssthresh != e.SsthreshAfter {
				t.Fatalf("event %d (%s, %d paths): BPF cwnd %d acc %d coupled %d ssthresh %d; model cwnd %d acc %d coupled %d ssthresh %d\ninputs %+v",
					i, alg.Name(), e.Conn.N, e.CwndAfter, e.AccAfter, e.Coupled, e.SsthreshAfter, out.Cwnd, out.Acc, o.Coupled, out.Ssthresh, e)
			}
			if e.Conn.N == 1 {
				single++
				// One path: every algorithm is Reno, 1/w per ACK.
				if o.Inc != model.One/int64(c.Paths[0].Cwnd) {
					t.Fatalf("event %d: single-path increase %d, Reno's is %d", i, o.Inc, model.One/int64(c.Paths[0].Cwnd))
				}
			} else {
				coupled++
			}
			if o.Inc < 0 {
				negative++
			}
		case cc.TraceLoss:
			loss++
			o := alg.Ssthresh(c)
			if o.Ssthresh != e.Ssthresh {
				t.Fatalf("event %d: after a loss BPF chose %d, the model %d; inputs %+v", i, e.Ssthresh, o.Ssthresh, e)
			}
		default:
			t.Fatalf("event %d: unknown kind %d", i, e.Kind)
		}
	}
	t.Logf("%s: %d avoidance steps (%d coupled, %d single-path, %d negative), %d losses, all identical",
		alg.Name(), avoid, coupled, single, negative, loss)
	if coupled < 100 || single < 100 || loss < 3 {
		t.Fatalf("too few decisions to compare (coupled %d, single %d, losses %d): the test saw too little", coupled, single, loss)
	}
}

// checkLISARepay replays a LISA donor's repayment through the model.
func checkLISARepay(t *testing.T, i int, e cc.TraceEvent) {
	t.Helper()
	w, ss := model.LISARepay(e.CwndBefore, e.Ssthresh, e.Acked, e.Clamp, e.Flags&cc.TraceReducing != 0)
	if w != e.CwndAfter || ss != e.SsthreshAfter {
		t.Fatalf("event %d: LISA repayment of %d (cwnd %d, ssthresh %d, loss window %d, flags %d): BPF cwnd %d ssthresh %d, model %d %d",
			i, e.Acked, e.CwndBefore, e.Ssthresh, e.Clamp, e.Flags, e.CwndAfter, e.SsthreshAfter, w, ss)
	}
}
