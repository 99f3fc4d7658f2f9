// SPDX-License-Identifier: Apache-2.0

package schedexp

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
)

func TestParseSpec(t *testing.T) {
	s, err := ParseSpec("1")
	if err != nil || len(s.Run) != 3 || len(s.Cases) != 3 || s.Reps != 0 || s.Smoke {
		t.Fatalf(`"1": %+v, %v`, s, err)
	}
	if s, err := ParseSpec("1 reps=2 out=/a out=/b"); err != nil || s.Reps != 2 || s.Out != "/b" || len(s.Run) != 3 {
		t.Fatalf(`"1 reps=2 out=/a out=/b": %+v, %v`, s, err)
	}
	s, err = ParseSpec("run=daps,cost scheds=default,minrtt reps=2 cases=2 bytes=512k queue=20p pace=0.5 rtt2=100,200 loss2=0,0.01 rate=4 seconds=8 warmup=2 costseconds=3 smoke=1 timeout=30 out=/tmp/x")
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{
		Run: []string{"daps", "cost"}, Schedulers: []string{"default", "minrtt"}, Reps: 2, Out: "/tmp/x", Smoke: true,
		Timeout: 30 * time.Minute, Cases: []int{2}, Bytes: 512 << 10, Queue: "20p", Pace: 0.5,
		RTT2: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, Loss2: []float64{0, 0.01},
		RateBits: 4e6, Duration: 8 * time.Second, Warmup: 2 * time.Second, CostDuration: 3 * time.Second,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", s, want)
	}
	if !s.Runs("cost") || s.Runs("papd") {
		t.Error("Runs does not follow run=")
	}
	if got := s.SchedulersOr(DAPSSchedulers); len(got) != 2 {
		t.Errorf("scheds= does not override: %v", got)
	}
	if got := (Spec{}).RepsOr(5); got != 5 {
		t.Errorf("no reps= gives %d, want the default", got)
	}
	for _, bad := range []string{"run=fast", "cases=4", "reps=0", "bytes=-1", "queue=big", "pace=1",
		"loss2=1", "rtt2=0", "rate=0", "seconds=3 warmup=5", "frobnicate=1", "reps"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The seed's buffer, read off its own minRTT numbers: about 1.2 best-path
// BDPs, and below RTT_max * T' at every RTT2 of its table (the regime the
// seed describes).
func TestSeedBufferRatio(t *testing.T) {
	r := SeedBufferRatio()
	// (36.8*0.15/(90.1*0.05) + 26.9*0.2/(89.9*0.05)) / 2
	want := (36.8*0.15/(90.1*0.05) + 26.9*0.2/(89.9*0.05)) / 2
	if math.Abs(r-want) > 1e-9 || r < 1.15 || r > 1.25 {
		t.Fatalf("ratio %.4f, want %.4f", r, want)
	}
	for _, row := range PAPDSeed {
		// buf / (RTT2 * T') = r * RTT1 / RTT2 (T' = the best path's rate)
		if r*PAPDRTT1.Seconds()/(row.RTT2Ms/1000) >= 1 {
			t.Errorf("RTT2 %g ms: buf >= RTT_max * T'", row.RTT2Ms)
		}
	}
	if m, p, ok := SeedUc(200*time.Millisecond, 0); !ok || math.Abs(m-26.9/89.9) > 1e-9 || math.Abs(p-83.4/89.9) > 1e-9 {
		t.Errorf("seed Uc at 200 ms, no loss: %v %v %v", m, p, ok)
	}
	if _, _, ok := SeedUc(100*time.Millisecond, 0); ok {
		t.Error("the seed has no row for 100 ms without loss")
	}
}

func TestQueueBytes(t *testing.T) {
	for _, c := range []struct {
		setting string
		rate    float64
		rtt     time.Duration
		want    uint32
	}{
		{"bdp", 1e6, 20 * time.Millisecond, 15000},  // 2500 B: the 10-packet floor
		{"bdp", 1e6, 200 * time.Millisecond, 25000}, // one BDP
		{"20p", 1e6, 200 * time.Millisecond, 30000},
	} {
		got, err := QueueBytes(c.setting, c.rate, c.rtt)
		if err != nil || got != c.want {
			t.Errorf("%s at %g bit/s %v: %d %v, want %d", c.setting, c.rate, c.rtt, got, err, c.want)
		}
	}
}

func TestCalibration(t *testing.T) {
	c := Calibration{TargetWindow: 75000, ProbeRmem: 75000, ProbeWindow: 50000}
	if got := c.RmemFor(); got != 112500 {
		t.Errorf("a probe window 2/3 of the target: tcp_rmem %d, want 112500", got)
	}
}

func TestPoolAndMarkdown(t *testing.T) {
	runs := []Run{
		{Scheduler: "default", GoodputBits: 1e6, BlockingMs: []float64{10, 20}, DelayMs: []float64{50, 60}},
		{Scheduler: "default", GoodputBits: 3e6, BlockingMs: []float64{30}, DelayMs: []float64{70}},
		{Scheduler: "minrtt", GoodputBits: 2e6, BlockingMs: []float64{5}, DelayMs: []float64{40}},
	}
	cells := Pool(runs, []string{"default", "minrtt", "daps"})
	if len(cells) != 2 {
		t.Fatalf("%d cells, want one per scheduler that ran", len(cells))
	}
	d := cells[0]
	if d.Runs != 2 || d.GoodputBits != 2e6 || d.Blocking.N != 3 || math.Abs(d.Blocking.Mean-20) > 1e-6 || d.Blocking.Max != 30 {
		t.Errorf("default pooled: %+v", d)
	}
	c := DAPSCases[1]
	res := DAPSResult{Meta: Meta{Smoke: true, Kernel: "7.3.4"}, Bytes: 1000, RecordSize: 1000, Queue: "bdp",
		Cases: []DAPSCaseResult{{Case: 2, C0Bits: c.C0, C1Bits: c.C1, RTT0Ms: 20, RTT1Ms: 200, A: c.Asymmetry(),
			ModelMs: ms(c.Model()), Runs: runs, Schedulers: cells}}}
	md := res.Markdown()
	for _, want := range []string{"Smoke run", "| 2 | 1 / 1 | 20 / 200 | 10.00 | default | 2 | 20.0 |", "| 90 | 1.00 |", "| minrtt | 1 | 5.0 |", "| 0.25 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the DAPS table lacks %q:\n%s", want, md)
		}
	}
}

func TestPAPDFinish(t *testing.T) {
	c := PAPDConfigResult{RTT2Ms: 200, Loss2: 0,
		Alone: [2][]Run{{{GoodputBits: 9e6}, {GoodputBits: 11e6}}, {{GoodputBits: 3e6}}},
		Runs:  []Run{{Scheduler: "minrtt", GoodputBits: 3e6}, {Scheduler: "papd", GoodputBits: 9e6}},
	}
	c.Finish([]string{"default", "minrtt", "papd"})
	if c.TBestBits != 10e6 || c.BestPath != 0 || len(c.Schedulers) != 2 || c.Schedulers[0].Uc != 0.3 || c.Schedulers[1].Uc != 0.9 {
		t.Fatalf("%+v", c)
	}
	md := PAPDResult{Configs: []PAPDConfigResult{c}, RateBits: 10e6}.Markdown()
	for _, want := range []string{"| 200 | 0 | 10.00 | 3.00 | 3.00 (30%) | 9.00 (90%) | 30% / 93% |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the PAPD table lacks %q:\n%s", want, md)
		}
	}
}

func TestPoolCost(t *testing.T) {
	runs := []CostRun{
		{Run: Run{Scheduler: "minrtt", GoodputBits: 4e6}, SendCalls: 100, SendNs: 100000, RetransCalls: 0},
		{Run: Run{Scheduler: "minrtt", GoodputBits: 6e6}, SendCalls: 300, SendNs: 500000, RetransCalls: 2, RetransNs: 3000},
		{Run: Run{Scheduler: "default", GoodputBits: 7e6}},
	}
	cells := PoolCost(runs, []string{"default", "minrtt"})
	if len(cells) != 2 || cells[1].SendNsPerCall != 1500 || cells[1].RetransNsPerCall != 1500 || cells[1].GoodputBits != 5e6 {
		t.Fatalf("%+v", cells)
	}
	md := CostResult{Cells: cells}.Markdown()
	for _, want := range []string{"| default | 1 | 7.00 | - | (not BPF) |", "| minrtt | 2 | 5.00 | 400 | 1500 | 2 | 1500 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the cost table lacks %q:\n%s", want, md)
		}
	}
}

// NewRun keeps the records' blocking times only where the capture gave
// an arrival.
func TestNewRun(t *testing.T) {
	base := time.Unix(0, 0)
	r := blocking.Result{Samples: []blocking.Sample{
		{Sent: base, Arrived: base.Add(10 * time.Millisecond), Read: base.Add(15 * time.Millisecond)},
	}}
	run := NewRun("minrtt", 1, r, true)
	if len(run.BlockingMs) != 1 || run.BlockingMs[0] != 5 || run.DelayMs[0] != 15 {
		t.Errorf("%+v", run)
	}
	r.Samples[0].Arrived = time.Time{}
	if run := NewRun("minrtt", 1, r, true); len(run.BlockingMs) != 0 || len(run.DelayMs) != 1 {
		t.Errorf("without a capture: %+v", run)
	}
}

// Render rebuilds the tables and figures from the JSON alone.
func TestRender(t *testing.T) {
	dir := t.TempDir()
	runs := []Run{{Scheduler: "default", GoodputBits: 1e6, BlockingMs: []float64{10}}, {Scheduler: "daps", GoodputBits: 1e6, BlockingMs: []float64{4}}}
	c := DAPSCases[1]
	daps := DAPSResult{Meta: Meta{Kernel: "7.3.4"}, Bytes: 1000, RecordSize: 1000, Queue: "bdp",
		Cases: []DAPSCaseResult{{Case: 2, C0Bits: c.C0, C1Bits: c.C1, RTT0Ms: 20, RTT1Ms: 200, A: c.Asymmetry(),
			ModelMs: ms(c.Model()), Runs: runs, Schedulers: Pool(runs, []string{"default", "daps"})}}}
	pc := PAPDConfigResult{RTT2Ms: 200, Alone: [2][]Run{{{GoodputBits: 10e6}}, {{GoodputBits: 3e6}}},
		Runs: []Run{{Scheduler: "minrtt", GoodputBits: 3e6}, {Scheduler: "papd", GoodputBits: 9e6}}}
	pc.Finish(PAPDSchedulers)
	papd := PAPDResult{Configs: []PAPDConfigResult{pc}, RateBits: 10e6}
	if err := Write(dir, "daps", daps, "stale"); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, "papd", papd, "stale"); err != nil {
		t.Fatal(err)
	}
	files, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"daps-bulk-blocking-mean.svg", "daps-bulk-blocking-p95.svg", "daps.md", "papd-uc.svg", "papd.md"}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("wrote %v, want %v", files, want)
	}
	for f, wants := range map[string][]string{
		"daps.md":                     {daps.Markdown()},
		"papd.md":                     {papd.Markdown()},
		"daps-bulk-blocking-mean.svg": {"<svg", "daps", "default", "case 2 (A = 10)", "seed model", "bulk sender"},
		"papd-uc.svg":                 {"<svg", "minrtt", "papd", "RTT2 200 ms, p2 0%"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", f, w)
			}
		}
	}
}

// MPTCP_CC_SCHED_RENDER=DIR re-renders the results in DIR (after a change
// of the tables or figures; the runs themselves need the VM).
func TestRenderDir(t *testing.T) {
	dir := os.Getenv("MPTCP_CC_SCHED_RENDER")
	if dir == "" {
		t.Skip("set MPTCP_CC_SCHED_RENDER=DIR to re-render the results in DIR")
	}
	files, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %v", files)
}
