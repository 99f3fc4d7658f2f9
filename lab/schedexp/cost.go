// SPDX-License-Identifier: Apache-2.0

package schedexp

import (
	"fmt"
	"time"
)

// CostPaths is the network of the cost experiment: two paths at a rate
// the VM carries, with different RTTs so that every scheduler has a
// choice to make on each call.
var CostPaths = [2]struct {
	RateBits float64
	RTT      time.Duration
}{{8e6, 20 * time.Millisecond}, {8e6, 80 * time.Millisecond}}

// CostReps is the default number of repetitions.
const CostReps = 3

// CostRun is one transfer under one scheduler with BPF statistics on.
type CostRun struct {
	Run
	SendCalls    uint64 `json:"get_send_calls"`
	SendNs       uint64 `json:"get_send_ns_total"`
	RetransCalls uint64 `json:"get_retrans_calls"`
	RetransNs    uint64 `json:"get_retrans_ns_total"`
}

// CostCell pools one scheduler's runs.
type CostCell struct {
	Scheduler        string  `json:"scheduler"`
	Runs             int     `json:"runs"`
	GoodputBits      float64 `json:"goodput_bits_mean"`
	SendCalls        uint64  `json:"get_send_calls"`
	SendNsPerCall    float64 `json:"get_send_ns_per_call"` // 0 for the kernel's default (not BPF)
	RetransCalls     uint64  `json:"get_retrans_calls"`
	RetransNsPerCall float64 `json:"get_retrans_ns_per_call"`
}

// PoolCost sums the calls and times of each scheduler's runs (so the
// per-call time weighs every call alike) and averages the goodput.
func PoolCost(runs []CostRun, schedulers []string) []CostCell {
	var out []CostCell
	for _, s := range schedulers {
		c := CostCell{Scheduler: s}
		var sendNs, retransNs uint64
		for _, r := range runs {
			if r.Scheduler != s {
				continue
			}
			c.Runs++
			c.GoodputBits += r.GoodputBits
			c.SendCalls += r.SendCalls
			c.RetransCalls += r.RetransCalls
			sendNs += r.SendNs
			retransNs += r.RetransNs
		}
		if c.Runs == 0 {
			continue
		}
		c.GoodputBits /= float64(c.Runs)
		if c.SendCalls > 0 {
			c.SendNsPerCall = float64(sendNs) / float64(c.SendCalls)
		}
		if c.RetransCalls > 0 {
			c.RetransNsPerCall = float64(retransNs) / float64(c.RetransCalls)
		}
		out = append(out, c)
	}
	return out
}

// CostResult is the whole experiment.
type CostResult struct {
	Meta
	Seconds float64    `json:"seconds"`
	Runs    []CostRun  `json:"runs"`
	Cells   []CostCell `json:"schedulers"`
}

// Markdown renders goodput and per-call cost per scheduler.
func (r CostResult) Markdown() string {
	b := r.begin()
	fmt.Fprintf(b, "Kernel %s (QEMU TCG: emulated CPU, so times are far above native); paths %g Mbit/s %v and %g Mbit/s %v; %g s bulk transfers. BPF time per call from bpf_prog_info run_time_ns / run_cnt with BPF statistics enabled; it includes the skeleton's subflow snapshot, common to every BPF scheduler.\n\n",
		r.Kernel, CostPaths[0].RateBits/1e6, CostPaths[0].RTT, CostPaths[1].RateBits/1e6, CostPaths[1].RTT, r.Seconds)
	b.WriteString("| scheduler | runs | goodput (Mbit/s) | get_send calls | ns / get_send | get_retrans calls | ns / get_retrans |\n|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cells {
		send, retr := "(not BPF)", "(not BPF)"
		if c.Scheduler != "default" {
			send, retr = fmt.Sprintf("%.0f", c.SendNsPerCall), fmt.Sprintf("%.0f", c.RetransNsPerCall)
			if c.RetransCalls == 0 {
				retr = "-"
			}
		}
		calls := func(n uint64) string {
			if c.Scheduler == "default" {
				return "-"
			}
			return fmt.Sprint(n)
		}
		fmt.Fprintf(b, "| %s | %d | %.2f | %s | %s | %s | %s |\n", c.Scheduler, c.Runs, c.GoodputBits/1e6,
			calls(c.SendCalls), send, calls(c.RetransCalls), retr)
	}
	return b.String()
}
