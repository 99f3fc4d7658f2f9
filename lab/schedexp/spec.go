// SPDX-License-Identifier: Apache-2.0

// Package schedexp defines the packet-scheduler experiments of the seed
// papers and renders their results (docs/results/sched.md):
//
//   - DAPS (seed 001): receive-buffer blocking time on the seed's three
//     asymmetric path pairs, next to the seed's worst-case model;
//   - PAPD (seed 004, second table): aggregation efficiency Uc = T_mp /
//     T_best with a receive buffer smaller than RTT_max * T';
//   - cost: each scheduler's time per get_send call from the kernel's BPF
//     run-time accounting, next to the default scheduler's goodput.
//
// The experiments run in the test kernel's VM (the only kernel here with
// the BPF scheduler hook): `make reproduce-sched`, or
// MPTCP_CC_SCHED_EXP=... go test -run TestSchedExpInVM ./lab/schedexp.
// This package holds what does not need a kernel (the cases, the seed's
// numbers, aggregation, tables); the runs are its tests.
package schedexp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Env gates and configures the experiments: unset, they are skipped;
// otherwise it is a list of key=value settings (ParseSpec lists them) that
// change the defaults; a "1" among them stands for the defaults, so "1"
// alone runs everything as DefaultSpec says.
const Env = "MPTCP_CC_SCHED_EXP"

// Spec is the parsed value of Env.
type Spec struct {
	Run        []string // experiments: daps, papd, cost
	Schedulers []string // overrides each experiment's own list
	Reps       int      // overrides each experiment's repetitions
	Out        string   // results directory
	Smoke      bool     // label the results a smoke run (a check of the runner, not a measurement)
	Timeout    time.Duration
	// DAPS
	Cases []int   // seed 001's cases, 1-3
	Bytes int64   // per transfer
	Queue string  // "bdp" (one bandwidth-delay product, at least 10 packets) or "<n>p"
	Pace  float64 // fraction of the paths' summed rate the sender is paced at; 0: bulk
	// PAPD
	RTT2     []time.Duration
	Loss2    []float64
	RateBits float64 // per path
	Duration time.Duration
	Warmup   time.Duration
	// cost
	CostDuration time.Duration
}

// Experiments are the names Run may list.
var Experiments = []string{"daps", "papd", "cost"}

// DefaultSpec is what "1" means.
func DefaultSpec() Spec {
	return Spec{
		Run:     Experiments,
		Timeout: 4 * time.Hour,
		Cases:   []int{1, 2, 3},
		Bytes:   2 << 20,
		Queue:   "bdp",
		RTT2:    []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond},
		Loss2:   []float64{0, 0.001, 0.01},
		// The seed's paths run at about 90 Mbit/s; the VM emulates its
		// links in user space under TCG, and 10 Mbit/s per path is what it
		// carries without its own CPU becoming the bottleneck.
		RateBits:     10e6,
		Duration:     20 * time.Second,
		Warmup:       5 * time.Second,
		CostDuration: 10 * time.Second,
	}
}

// ParseSpec parses the value of Env. Keys:
//
//	run=daps,papd,cost    which experiments
//	scheds=default,minrtt the schedulers ("default" is the kernel's own)
//	reps=N                repetitions of every case
//	out=DIR               where the JSON and markdown results go
//	smoke=1               label the results a smoke run
//	timeout=MIN           bound on the whole VM run, minutes (default 240)
//	cases=1,2,3           DAPS: seed 001's cases
//	bytes=N               DAPS: bytes per transfer (k, M suffixes: KiB, MiB)
//	queue=bdp|Np          DAPS: each path's drop-tail queue
//	pace=F                DAPS: pace the sender at F x the summed path rates (0: bulk)
//	rtt2=100,150,200      PAPD: path 2's RTTs, ms
//	loss2=0,0.001,0.01    PAPD: path 2's loss probabilities
//	rate=10               PAPD: Mbit/s per path
//	seconds=20 warmup=5   PAPD: transfer length and what goodput leaves out
//	costseconds=10        cost: transfer length
func ParseSpec(v string) (Spec, error) {
	s := DefaultSpec()
	for _, field := range strings.Fields(v) {
		if field == "1" {
			continue
		}
		k, val, ok := strings.Cut(field, "=")
		if !ok || val == "" {
			return s, fmt.Errorf("%s: %q is not key=value", Env, field)
		}
		list := strings.Split(val, ",")
		var err error
		switch k {
		case "run":
			for _, e := range list {
				if !slices.Contains(Experiments, e) {
					return s, fmt.Errorf("%s run: %q is none of %s", Env, e, strings.Join(Experiments, ", "))
				}
			}
			s.Run = list
		case "scheds":
			s.Schedulers = list
		case "reps":
			s.Reps, err = strconv.Atoi(val)
			if err == nil && s.Reps < 1 {
				err = fmt.Errorf("want at least 1")
			}
		case "out":
			s.Out = val
		case "smoke":
			s.Smoke, err = strconv.ParseBool(val)
		case "timeout":
			var min float64
			min, err = strconv.ParseFloat(val, 64)
			s.Timeout = time.Duration(min * float64(time.Minute))
			if err == nil && min <= 0 {
				err = fmt.Errorf("want a positive number of minutes")
			}
		case "cases":
			s.Cases = nil
			for _, c := range list {
				n, cerr := strconv.Atoi(c)
				if cerr != nil || n < 1 || n > len(DAPSCases) {
					return s, fmt.Errorf("%s cases: %q is not a case of seed 001 (1-%d)", Env, c, len(DAPSCases))
				}
				s.Cases = append(s.Cases, n)
			}
		case "bytes":
			s.Bytes, err = parseBytes(val)
		case "queue":
			if val != "bdp" {
				_, err = queuePackets(val)
			}
			s.Queue = val
		case "pace":
			s.Pace, err = strconv.ParseFloat(val, 64)
			if err == nil && (s.Pace < 0 || s.Pace >= 1) {
				err = fmt.Errorf("want a fraction in [0, 1)")
			}
		case "rtt2":
			s.RTT2 = nil
			for _, r := range list {
				ms, perr := strconv.ParseFloat(r, 64)
				if perr != nil || ms <= 0 {
					return s, fmt.Errorf("%s rtt2: %q is not a positive number of ms", Env, r)
				}
				s.RTT2 = append(s.RTT2, time.Duration(ms*float64(time.Millisecond)))
			}
		case "loss2":
			s.Loss2 = nil
			for _, l := range list {
				p, perr := strconv.ParseFloat(l, 64)
				if perr != nil || p < 0 || p >= 1 {
					return s, fmt.Errorf("%s loss2: %q is not a probability below 1", Env, l)
				}
				s.Loss2 = append(s.Loss2, p)
			}
		case "rate":
			var mbit float64
			mbit, err = strconv.ParseFloat(val, 64)
			s.RateBits = mbit * 1e6
			if err == nil && mbit <= 0 {
				err = fmt.Errorf("want a positive rate")
			}
		case "seconds", "warmup", "costseconds":
			var sec float64
			sec, err = strconv.ParseFloat(val, 64)
			d := time.Duration(sec * float64(time.Second))
			if err == nil && sec < 0 {
				err = fmt.Errorf("want a duration >= 0")
			}
			switch k {
			case "seconds":
				s.Duration = d
			case "warmup":
				s.Warmup = d
			default:
				s.CostDuration = d
			}
		default:
			return s, fmt.Errorf("%s: unknown key %q (run, scheds, reps, out, smoke, timeout, cases, bytes, queue, pace, rtt2, loss2, rate, seconds, warmup, costseconds)", Env, k)
		}
		if err != nil {
			return s, fmt.Errorf("%s %s=%s: %v", Env, k, val, err)
		}
	}
	if s.Warmup >= s.Duration {
		return s, fmt.Errorf("%s: the warm-up (%v) must be shorter than the transfer (%v)", Env, s.Warmup, s.Duration)
	}
	return s, nil
}

// Runs reports whether experiment e is selected.
func (s Spec) Runs(e string) bool { return slices.Contains(s.Run, e) }

// SchedulersOr returns the schedulers the spec names, or def.
func (s Spec) SchedulersOr(def []string) []string {
	if len(s.Schedulers) > 0 {
		return s.Schedulers
	}
	return def
}

// RepsOr returns the spec's repetitions, or def.
func (s Spec) RepsOr(def int) int {
	if s.Reps > 0 {
		return s.Reps
	}
	return def
}

func parseBytes(v string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(v, "k"):
		mult, v = 1<<10, strings.TrimSuffix(v, "k")
	case strings.HasSuffix(v, "M"):
		mult, v = 1<<20, strings.TrimSuffix(v, "M")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("not a positive byte count")
	}
	return n * mult, nil
}

func queuePackets(v string) (int, error) {
	p, ok := strings.CutSuffix(v, "p")
	n, err := strconv.Atoi(p)
	if !ok || err != nil || n < 1 {
		return 0, fmt.Errorf("queue %q: want bdp or a packet count such as 20p", v)
	}
	return n, nil
}
