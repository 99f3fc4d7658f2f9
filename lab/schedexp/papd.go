// SPDX-License-Identifier: Apache-2.0

package schedexp

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// PAPDSeedRow is a row of seed 004's second table (Mbit/s): path 1 at
// RTT1 = 50 ms without loss, path 2 at RTT2 with loss p2.
type PAPDSeedRow struct {
	RTT2Ms             float64
	P2                 float64
	MinRTT, PAPD, Best float64
}

// PAPDSeed is that table.
var PAPDSeed = []PAPDSeedRow{
	{100, 0.001, 72.8, 88.5, 90.5},
	{100, 0.01, 45.1, 85.8, 90.3},
	{150, 0, 36.8, 84.6, 90.1},
	{150, 0.0001, 51.3, 86.9, 90.5},
	{150, 0.001, 47.7, 86.3, 90.2},
	{150, 0.01, 30.6, 84.7, 89.9},
	{200, 0, 26.9, 83.4, 89.9},
	{200, 0.0001, 39, 85.2, 90.2},
	{200, 0.001, 36.8, 84.8, 90},
	{200, 0.01, 23.4, 83.7, 90},
}

// PAPDRTT1 is the seed's path 1 round-trip time.
const PAPDRTT1 = 50 * time.Millisecond

// PAPDSchedulers are the seed's comparison plus the kernel's default.
var PAPDSchedulers = []string{"default", "minrtt", "papd"}

// PAPDReps is the default number of repetitions.
const PAPDReps = 3

// SeedBufferRatio is buf / (RTT1 * T_best) in the seed's runs, which the
// seed does not state: it is read off its own bound. Where minRTT is held
// by the buffer, T_mp = buf / RTT_max, so buf = T_minRTT * RTT2; the
// lossless rows (150 and 200 ms, where loss does not hold it instead)
// give 690 kB and 673 kB against a best path of 90 Mbit/s at 50 ms
// (560 kB): a buffer of about 1.2 best-path BDPs. It is the mean of the
// two. With it, buf <= RTT_max * T' holds at every RTT2 of the table.
func SeedBufferRatio() float64 {
	var sum float64
	var n int
	for _, r := range PAPDSeed {
		if r.P2 != 0 {
			continue
		}
		buf := r.MinRTT * 1e6 / 8 * r.RTT2Ms / 1000
		bdp := r.Best * 1e6 / 8 * PAPDRTT1.Seconds()
		sum += buf / bdp
		n++
	}
	return sum / float64(n)
}

// SeedUc returns the seed's Uc of minRTT and PAPD at (rtt2, p2), if the
// table has that row.
func SeedUc(rtt2 time.Duration, p2 float64) (minrtt, papd float64, ok bool) {
	for _, r := range PAPDSeed {
		if math.Abs(r.RTT2Ms-ms(rtt2)) < 0.5 && r.P2 == p2 {
			return r.MinRTT / r.Best, r.PAPD / r.Best, true
		}
	}
	return 0, 0, false
}

// PAPDConfigResult is one (RTT2, p2) network: each path alone and each
// scheduler on both.
type PAPDConfigResult struct {
	RTT2Ms float64 `json:"rtt2_ms"`
	Loss2  float64 `json:"loss2"`
	// Alone[i] are the runs with path i only (MPTCP, one subflow).
	Alone      [2][]Run `json:"alone"`
	TBestBits  float64  `json:"t_best_bits"` // the better path's mean goodput alone
	BestPath   int      `json:"best_path"`
	Runs       []Run    `json:"runs"`
	Schedulers []UcCell `json:"schedulers"`
}

// UcCell is one scheduler's mean goodput on a network and its
// aggregation efficiency.
type UcCell struct {
	Scheduler   string  `json:"scheduler"`
	Runs        int     `json:"runs"`
	GoodputBits float64 `json:"goodput_bits_mean"`
	Uc          float64 `json:"uc"`
}

func meanGoodput(runs []Run) float64 {
	if len(runs) == 0 {
		return 0
	}
	var s float64
	for _, r := range runs {
		s += r.GoodputBits
	}
	return s / float64(len(runs))
}

// Finish computes T_best and every scheduler's Uc = T_mp / T_best.
func (c *PAPDConfigResult) Finish(schedulers []string) {
	g0, g1 := meanGoodput(c.Alone[0]), meanGoodput(c.Alone[1])
	c.TBestBits, c.BestPath = g0, 0
	if g1 > g0 {
		c.TBestBits, c.BestPath = g1, 1
	}
	c.Schedulers = nil
	for _, s := range schedulers {
		var runs []Run
		for _, r := range c.Runs {
			if r.Scheduler == s {
				runs = append(runs, r)
			}
		}
		if len(runs) == 0 {
			continue
		}
		cell := UcCell{Scheduler: s, Runs: len(runs), GoodputBits: meanGoodput(runs)}
		if c.TBestBits > 0 {
			cell.Uc = cell.GoodputBits / c.TBestBits
		}
		c.Schedulers = append(c.Schedulers, cell)
	}
}

// Calibration is how the server's receive buffer was sized so that the
// window the client sees is the target. The buffer is the server
// namespace's net.ipv4.tcp_rmem with min = default = max, so autotuning
// cannot move it (SO_RCVBUF would also fix it, but a locked buffer under
// 64 KiB at the handshake gets no window scaling, which caps the window
// at 65535 bytes whatever the buffer becomes). The kernel advertises a
// fraction of the buffer (what it expects of payload per byte of memory):
// one run with the buffer at the target shows the fraction, and the
// buffer is scaled by it.
type Calibration struct {
	TargetWindow int    `json:"target_window_bytes"`
	ProbeRmem    int    `json:"probe_tcp_rmem"`
	ProbeWindow  uint64 `json:"probe_max_window_bytes"`
	Rmem         int    `json:"tcp_rmem"` // what every run then had
}

// RmemFor scales the probe's buffer to the target window.
func (c Calibration) RmemFor() int {
	if c.ProbeWindow == 0 {
		return c.TargetWindow
	}
	return int(math.Round(float64(c.ProbeRmem) * float64(c.TargetWindow) / float64(c.ProbeWindow)))
}

// PAPDResult is the whole experiment.
type PAPDResult struct {
	Meta
	RateBits    float64            `json:"rate_bits_per_path"`
	RTT1Ms      float64            `json:"rtt1_ms"`
	BufRatio    float64            `json:"buf_over_rtt1_rate"`
	Calibration Calibration        `json:"calibration"`
	Seconds     float64            `json:"seconds"`
	WarmupSec   float64            `json:"warmup_seconds"`
	Configs     []PAPDConfigResult `json:"configs"`
}

// windows returns the least and the greatest of the runs' largest
// advertised windows.
func (r PAPDResult) windows() (lo, hi uint64) {
	for _, c := range r.Configs {
		for _, runs := range [][]Run{c.Alone[0], c.Alone[1], c.Runs} {
			for _, x := range runs {
				if lo == 0 || x.MaxWindow < lo {
					lo = x.MaxWindow
				}
				hi = max(hi, x.MaxWindow)
			}
		}
	}
	return lo, hi
}

// Markdown renders, per network, each path alone, each scheduler's
// goodput with its Uc, and the seed's Uc where its table has the row.
func (r PAPDResult) Markdown() string {
	b := r.begin()
	lo, hi := r.windows()
	fmt.Fprintf(b, "Kernel %s; %g Mbit/s per path, RTT1 %g ms without loss; receive window target %d bytes (%.2f x RTT1 x rate): server tcp_rmem %d (calibrated: %d gave a window of %d); largest window advertised per run %d-%d bytes; %g s transfers, goodput after %g s.\n\n",
		r.Kernel, r.RateBits/1e6, r.RTT1Ms, r.Calibration.TargetWindow, r.BufRatio, r.Calibration.Rmem,
		r.Calibration.ProbeRmem, r.Calibration.ProbeWindow, lo, hi, r.Seconds, r.WarmupSec)
	var scheds []string
	for _, c := range r.Configs {
		for _, s := range c.Schedulers {
			if !slices.Contains(scheds, s.Scheduler) {
				scheds = append(scheds, s.Scheduler)
			}
		}
	}
	b.WriteString("| RTT2 (ms) | p2 | path 1 alone (Mbit/s) | path 2 alone |")
	for _, s := range scheds {
		fmt.Fprintf(b, " %s: T_mp (Uc) |", s)
	}
	b.WriteString(" seed Uc minRTT / PAPD |\n|---|---|---|---|")
	for range scheds {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, c := range r.Configs {
		fmt.Fprintf(b, "| %g | %g | %.2f | %.2f |", c.RTT2Ms, c.Loss2, meanGoodput(c.Alone[0])/1e6, meanGoodput(c.Alone[1])/1e6)
		for _, s := range scheds {
			cell := "-"
			for _, x := range c.Schedulers {
				if x.Scheduler == s {
					cell = fmt.Sprintf("%.2f (%.0f%%)", x.GoodputBits/1e6, 100*x.Uc)
				}
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		if m, p, ok := SeedUc(time.Duration(c.RTT2Ms*float64(time.Millisecond)), c.Loss2); ok {
			fmt.Fprintf(b, " %.0f%% / %.0f%% |\n", 100*m, 100*p)
		} else {
			b.WriteString(" (no row) |\n")
		}
	}
	return b.String()
}
