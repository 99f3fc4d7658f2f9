// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The AQM kinds (AQM.Kind).
const (
	DropTail = ""         // the drop-tail FIFO of Link.Offer
	RED      = "red"      // gentle RED (red.go)
	CoDel    = "codel"    // RFC 8289 (codel.go)
	FQCoDel  = "fq_codel" // RFC 8290 (fqcodel.go)
)

// AQM selects the discipline of a direction's bottleneck queue and its
// parameters. The zero value is the drop-tail FIFO. A zero parameter takes
// its default; parameters of another kind must stay zero. The hard limits
// of every kind are DirectionConfig.QueuePackets and QueueBytes (defaults
// per kind below when both are 0).
type AQM struct {
	Kind string // DropTail, RED, CoDel or FQCoDel

	// RED (Floyd and Jacobson 1993, with "gentle" RED). Thresholds count
	// packets, as in the paper and ns-2's default: the queues here carry
	// mostly full-size data packets, and a packet count keeps the
	// thresholds independent of the MTU. The defaults: MinTh is a sixth
	// of the hard limit in packets (QueueBytes/1500 when the limit is in
	// bytes), at least Floyd's 5, so that with MaxTh = 3*MinTh the gentle
	// region ends (drop probability 1 at 2*MaxTh) at the hard limit; 5
	// when there is no limit. MaxTh 3*MinTh, Wq 0.002, MaxP 0.1.
	MinTh, MaxTh float64
	Wq, MaxP     float64

	// CoDel and FQ-CoDel (RFC 8289 section 4.2 and RFC 8290 section 5.2
	// defaults: 5 ms and 100 ms).
	Target, Interval time.Duration

	// FQ-CoDel: Flows queues (default 1024) served by deficit round
	// robin with Quantum bytes per round (default 1500: Linux's 1514 is
	// an Ethernet frame, and linkem counts IP bytes, so 1500 is the same
	// full-size packet).
	Flows, Quantum int
}

// Defaults of the hard limits when QueuePackets and QueueBytes are both 0.
const (
	defaultREDLimit     = 1000  // packets, Linux's default txqueuelen
	defaultCoDelLimit   = 1000  // packets, Linux sch_codel's default
	defaultFQCoDelLimit = 10240 // packets, RFC 8290 section 5.2.4 and Linux
	// defaultFQCoDelBytes is fq_codel's byte limit when QueueBytes is 0:
	// Linux's memory_limit of 32 MB, counted here in IP bytes.
	defaultFQCoDelBytes = 32 << 20
)

func (a AQM) validate() error {
	red := a.MinTh != 0 || a.MaxTh != 0 || a.Wq != 0 || a.MaxP != 0
	codel := a.Target != 0 || a.Interval != 0
	fq := a.Flows != 0 || a.Quantum != 0
	switch a.Kind {
	case DropTail:
		if red || codel || fq {
			return fmt.Errorf("linkem: AQM parameters set without an AQM kind; set AQM.Kind to %q, %q or %q", RED, CoDel, FQCoDel)
		}
	case RED:
		if codel || fq {
			return errors.New("linkem: red takes min_th, max_th, w_q and max_p only")
		}
		switch {
		case a.MinTh < 0 || a.MaxTh < 0:
			return fmt.Errorf("linkem: red thresholds must not be negative (min_th %v, max_th %v)", a.MinTh, a.MaxTh)
		case a.MaxTh != 0 && a.MinTh != 0 && a.MaxTh <= a.MinTh:
			return fmt.Errorf("linkem: red max_th %v must be above min_th %v", a.MaxTh, a.MinTh)
		case !(a.Wq >= 0 && a.Wq <= 1):
			return fmt.Errorf("linkem: red w_q %v outside (0, 1]", a.Wq)
		case !(a.MaxP >= 0 && a.MaxP <= 1):
			return fmt.Errorf("linkem: red max_p %v outside (0, 1]", a.MaxP)
		}
	case CoDel, FQCoDel:
		if red || (a.Kind == CoDel && fq) {
			return fmt.Errorf("linkem: %s takes target and interval (fq_codel also flows and quantum) only", a.Kind)
		}
		switch {
		case a.Target < 0 || a.Interval < 0:
			return fmt.Errorf("linkem: %s target %v and interval %v must not be negative", a.Kind, a.Target, a.Interval)
		case a.Flows < 0 || a.Quantum < 0:
			return fmt.Errorf("linkem: fq_codel flows %d and quantum %d must not be negative", a.Flows, a.Quantum)
		case a.Target != 0 && a.Interval != 0 && a.Target >= a.Interval:
			return fmt.Errorf("linkem: %s target %v must be below interval %v", a.Kind, a.Target, a.Interval)
		}
	default:
		return fmt.Errorf("linkem: unknown AQM %q; want %q, %q, %q or none (drop-tail)", a.Kind, RED, CoDel, FQCoDel)
	}
	return nil
}

// newQdisc builds the queue discipline of cfg (cfg.AQM.Kind != DropTail).
func newQdisc(cfg DirectionConfig, drop dropFunc) qdisc {
	a := cfg.AQM
	limP, limB := cfg.QueuePackets, cfg.QueueBytes
	target, interval := a.Target, a.Interval
	if target == 0 {
		target = 5 * time.Millisecond
	}
	if interval == 0 {
		interval = 100 * time.Millisecond
	}
	switch a.Kind {
	case RED:
		r := &red{limitPackets: limP, limitBytes: limB, minTh: a.MinTh, maxTh: a.MaxTh, wq: a.Wq, maxP: a.MaxP, count: -1, drop: drop,
			rng: rand.New(rand.NewPCG(cfg.Seed, 0x72656421))} // "red!"
		if r.minTh == 0 {
			r.minTh = 5
			if lim := limitInPackets(limP, limB); lim > 0 {
				r.minTh = max(5, lim/6)
			}
		}
		if r.maxTh == 0 {
			r.maxTh = 3 * r.minTh
		}
		if limP == 0 && limB == 0 {
			r.limitPackets = defaultREDLimit
		}
		if r.wq == 0 {
			r.wq = 0.002
		}
		if r.maxP == 0 {
			r.maxP = 0.1
		}
		// Floyd's s, "a typical transmission time for a small packet",
		// for the idle-time correction: here a full-size packet, the
		// typical data packet.
		switch {
		case cfg.Rate > 0:
			r.s = time.Duration(1500 * 8 * float64(time.Second) / float64(cfg.Rate))
		case cfg.Trace != nil:
			r.s = time.Duration(1500 * 8 * float64(time.Second) / cfg.Trace.MeanRate())
		}
		return r
	case CoDel:
		c := &codel{limitPackets: limP, limitBytes: limB, p: codelParams{target: target, interval: interval}, drop: drop}
		if limP == 0 && limB == 0 {
			c.limitPackets = defaultCoDelLimit
		}
		return c
	default: // FQCoDel
		f := newFQCoDel(max(a.Flows, 0), a.Quantum, codelParams{target: target, interval: interval}, drop)
		f.limitPackets, f.limitBytes = limP, limB
		if limP == 0 {
			f.limitPackets = defaultFQCoDelLimit
		}
		if limB == 0 {
			f.limitBytes = defaultFQCoDelBytes
		}
		return f
	}
}

// limitInPackets is the hard limit in full-size packets (0: none).
func limitInPackets(limP, limB int) float64 {
	switch {
	case limP > 0 && limB > 0:
		return min(float64(limP), float64(limB)/1500)
	case limP > 0:
		return float64(limP)
	default:
		return float64(limB) / 1500
	}
}
