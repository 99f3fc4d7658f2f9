// SPDX-License-Identifier: Apache-2.0

package schedexp

import (
	"fmt"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/blocking"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
)

// DAPSCase is one of seed 001's path pairs: path 0 fast (C0, RTT0),
// path 1 slow (C1, RTT1).
type DAPSCase struct {
	N          int
	C0, C1     float64 // bits/s
	RTT0, RTT1 time.Duration
	SeedA      float64 // the asymmetry as the seed prints it
}

// DAPSCases are the seed's table "Case C0 C1 RTT1 A" (RTT0 = 20 ms).
var DAPSCases = []DAPSCase{
	{N: 1, C0: 1e6, C1: 1e6, RTT0: 20 * time.Millisecond, RTT1: 100 * time.Millisecond, SeedA: 5},
	{N: 2, C0: 1e6, C1: 1e6, RTT0: 20 * time.Millisecond, RTT1: 200 * time.Millisecond, SeedA: 10},
	{N: 3, C0: 1.5e6, C1: 0.5e6, RTT0: 20 * time.Millisecond, RTT1: 200 * time.Millisecond, SeedA: 3.33},
}

// DAPSSchedulers are the seed's comparison for MPTCP: the kernel's default,
// minRTT (what CMT-SCTP's round robin becomes in MPTCP terms), the two
// delay-aware schedulers of the literature, and DAPS.
var DAPSSchedulers = []string{"default", "minrtt", "blest", "ecf", "daps"}

// DAPSReps is the default number of repetitions of each cell.
const DAPSReps = 5

func (c DAPSCase) paths() (fast, slow blocking.ModelPath) {
	return blocking.ModelPath{RateBits: c.C0, RTT: c.RTT0}, blocking.ModelPath{RateBits: c.C1, RTT: c.RTT1}
}

// Model is the seed's worst-case blocking time for the case.
func (c DAPSCase) Model() time.Duration {
	f, s := c.paths()
	return blocking.WorstCase(f, s, blocking.SeedPacketBytes)
}

// Asymmetry is A = (C1 RTT1) / (C0 RTT0).
func (c DAPSCase) Asymmetry() float64 {
	f, s := c.paths()
	return blocking.Asymmetry(f, s)
}

// QueueBytes is a path's drop-tail queue for a Spec.Queue setting: "bdp"
// is one bandwidth-delay product of the path, at least 10 full-size
// packets (at the seed's 1 Mbit/s and 20 ms one BDP is under two packets,
// too few for TCP to keep a path busy); "Np" is N packets.
func QueueBytes(setting string, rateBits float64, rtt time.Duration) (uint32, error) {
	if setting == "bdp" {
		return uint32(max(rateBits/8*rtt.Seconds(), 10*1500)), nil
	}
	n, err := queuePackets(setting)
	return uint32(n * 1500), err
}

// Run is one measured transfer of an experiment.
type Run struct {
	Scheduler   string  `json:"scheduler"`
	Rep         int     `json:"rep"`
	GoodputBits float64 `json:"goodput_bits"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	Subflows    int     `json:"subflows,omitempty"`
	// SubflowBytes is the payload each subflow carried, the initial (path
	// 0's) first; absent in runs recorded before it was captured.
	SubflowBytes []uint64         `json:"subflow_bytes,omitempty"`
	MaxWindow    uint64           `json:"max_window_bytes,omitempty"` // largest receive window the server advertised
	RcvBuf       int              `json:"rcvbuf_bytes"`               // the server socket's SO_RCVBUF when accepted
	Blocking     blocking.Summary `json:"blocking"`
	Delay        blocking.Summary `json:"delay"`
	BlockingMs   []float64        `json:"blocking_ms,omitempty"` // every record's, in stream order
	DelayMs      []float64        `json:"delay_ms,omitempty"`
	Packets      uint64           `json:"captured_packets,omitempty"`
}

// NewRun fills a Run from a measured transfer.
func NewRun(sched string, rep int, r blocking.Result, samples bool) Run {
	run := Run{
		Scheduler: sched, Rep: rep, GoodputBits: r.Goodput, Bytes: r.Bytes, Seconds: r.Duration.Seconds(),
		Subflows: r.Subflows, SubflowBytes: r.SubflowBytes, MaxWindow: r.MaxWindow, RcvBuf: r.RcvBuf,
		Blocking: r.Blocking, Delay: r.Delay, Packets: r.Capture.Packets,
	}
	if samples {
		for _, s := range r.Samples {
			if !s.Arrived.IsZero() {
				run.BlockingMs = append(run.BlockingMs, ms(s.Blocking()))
			}
			run.DelayMs = append(run.DelayMs, ms(s.Delay()))
		}
	}
	return run
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func durations(msList []float64) []time.Duration {
	out := make([]time.Duration, len(msList))
	for i, m := range msList {
		out[i] = time.Duration(m * float64(time.Millisecond))
	}
	return out
}

// DAPSCaseResult is every run of one case.
type DAPSCaseResult struct {
	Case       int     `json:"case"`
	C0Bits     float64 `json:"c0_bits"`
	C1Bits     float64 `json:"c1_bits"`
	RTT0Ms     float64 `json:"rtt0_ms"`
	RTT1Ms     float64 `json:"rtt1_ms"`
	A          float64 `json:"asymmetry"`
	ModelMs    float64 `json:"model_maxblock_ms"`
	Queue0     uint32  `json:"queue0_bytes"`
	Queue1     uint32  `json:"queue1_bytes"`
	Runs       []Run   `json:"runs"`
	Schedulers []Cell  `json:"schedulers"` // the runs pooled per scheduler
}

// NewCaseResult describes seed 001's case n (1-3) with each path's queue
// as the queue setting (QueueBytes) gives it; no runs yet.
func NewCaseResult(n int, queue string) (DAPSCaseResult, error) {
	if n < 1 || n > len(DAPSCases) {
		return DAPSCaseResult{}, fmt.Errorf("seed 001 has cases 1 to %d, not %d", len(DAPSCases), n)
	}
	c := DAPSCases[n-1]
	q0, err := QueueBytes(queue, c.C0, c.RTT0)
	if err != nil {
		return DAPSCaseResult{}, err
	}
	q1, _ := QueueBytes(queue, c.C1, c.RTT1)
	return DAPSCaseResult{Case: n, C0Bits: c.C0, C1Bits: c.C1, RTT0Ms: ms(c.RTT0), RTT1Ms: ms(c.RTT1),
		A: c.Asymmetry(), ModelMs: ms(c.Model()), Queue0: q0, Queue1: q1}, nil
}

// Bottlenecks are the case's paths as emulated links: path 0 the fast
// one, path 1 the slow one, each with its drop-tail queue and half its RTT
// of delay each way.
func (c DAPSCaseResult) Bottlenecks() []topo.Shaping {
	d := func(rttMs float64) time.Duration { return time.Duration(rttMs * float64(time.Millisecond) / 2) }
	return []topo.Shaping{
		{RateBits: uint64(c.C0Bits), Delay: d(c.RTT0Ms), QueueBytes: c.Queue0},
		{RateBits: uint64(c.C1Bits), Delay: d(c.RTT1Ms), QueueBytes: c.Queue1},
	}
}

// Cell pools the runs of one scheduler in one case.
type Cell struct {
	Scheduler   string           `json:"scheduler"`
	Runs        int              `json:"runs"`
	Blocking    blocking.Summary `json:"blocking"` // over every record of every run
	Delay       blocking.Summary `json:"delay"`
	GoodputBits float64          `json:"goodput_bits_mean"`
	// SlowShare is the mean share of the payload path 1 (the slow path)
	// carried, over the runs that recorded it (-1: none did).
	SlowShare float64 `json:"slow_share_mean"`
}

// Pool summarizes the runs per scheduler, in the order schedulers lists.
func Pool(runs []Run, schedulers []string) []Cell {
	var out []Cell
	for _, s := range schedulers {
		c := Cell{Scheduler: s}
		var b, d []float64
		var share float64
		shares := 0
		for _, r := range runs {
			if r.Scheduler != s {
				continue
			}
			c.Runs++
			c.GoodputBits += r.GoodputBits
			if len(r.SubflowBytes) == 2 && r.SubflowBytes[0]+r.SubflowBytes[1] > 0 {
				share += float64(r.SubflowBytes[1]) / float64(r.SubflowBytes[0]+r.SubflowBytes[1])
				shares++
			}
			b = append(b, r.BlockingMs...)
			d = append(d, r.DelayMs...)
		}
		if c.Runs == 0 {
			continue
		}
		c.GoodputBits /= float64(c.Runs)
		c.SlowShare = -1
		if shares > 0 {
			c.SlowShare = share / float64(shares)
		}
		c.Blocking = blocking.Summarize(durations(b))
		c.Delay = blocking.Summarize(durations(d))
		out = append(out, c)
	}
	return out
}

// DAPSResult is the whole experiment.
type DAPSResult struct {
	Meta
	Bytes      int64            `json:"bytes_per_run"`
	RecordSize int              `json:"record_bytes"`
	Queue      string           `json:"queue"`
	Pace       float64          `json:"pace"`
	Cases      []DAPSCaseResult `json:"cases"`
}

// Markdown renders the pooled table: per case and scheduler, the blocking
// time (mean, 95th percentile, max over every record of every run), the
// model, the one-way delay, the goodput and the slow path's share of the
// bytes, and the mean blocking relative to the kernel's default
// scheduler's.
func (r DAPSResult) Markdown() string {
	b := r.begin()
	fmt.Fprintf(b, "Kernel %s; %d bytes per transfer in %d-byte records; queue %s; %s.\n\n",
		r.Kernel, r.Bytes, r.RecordSize, r.Queue, paceText(r.Pace))
	b.WriteString("| case | C0 / C1 (Mbit/s) | RTT0 / RTT1 (ms) | A | scheduler | runs | blocking mean (ms) | p95 | max | model T_maxblock (ms) | mean vs default | delay mean / p95 (ms) | goodput (Mbit/s) | on the slow path |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cases {
		var def float64
		for _, cell := range c.Schedulers {
			if cell.Scheduler == "default" {
				def = cell.Blocking.Mean
			}
		}
		for _, cell := range c.Schedulers {
			vs := "-"
			if def > 0 {
				vs = fmt.Sprintf("%.2f", cell.Blocking.Mean/def)
			}
			slow := "-"
			if cell.SlowShare >= 0 {
				slow = fmt.Sprintf("%.0f%%", 100*cell.SlowShare)
			}
			fmt.Fprintf(b, "| %d | %g / %g | %g / %g | %.2f | %s | %d | %.1f | %.1f | %.1f | %.0f | %s | %.0f / %.0f | %.2f | %s |\n",
				c.Case, c.C0Bits/1e6, c.C1Bits/1e6, c.RTT0Ms, c.RTT1Ms, c.A, cell.Scheduler, cell.Runs,
				cell.Blocking.Mean, cell.Blocking.P95, cell.Blocking.Max, c.ModelMs, vs,
				cell.Delay.Mean, cell.Delay.P95, cell.GoodputBits/1e6, slow)
		}
	}
	return b.String()
}

func paceText(f float64) string {
	if f == 0 {
		return "bulk sender"
	}
	return fmt.Sprintf("sender paced at %.0f%% of the summed path rates", f*100)
}
