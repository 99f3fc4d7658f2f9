// SPDX-License-Identifier: Apache-2.0

// Package pathctl is the path controller: PAPD's mode selection (seed 004)
// carried out on any kernel through the MPTCP backup flag (MP_PRIO), which
// the kernel's default scheduler honours - a backup subflow is used only
// when no other subflow can send.
//
// The Engine is the decision, pure and clock-free (it reads time from the
// samples), so tests drive it with recorded series; run.go samples real
// connections and applies the decisions through the mptcp_pm netlink
// family.
//
// The rule, per connection (docs/pathctl.md has the why):
//
//   - Measure, never model: the goodput of a mode is the bytes the peer
//     acknowledged while the mode ran, over the time it ran (the first
//     period after a switch is left out: windows need it to settle). Which
//     path is best comes from each subflow's delivery rate as TCP measures
//     it (tcpi_delivery_rate: delivered over the sampling interval, the
//     estimate BBR uses), the max over a window of periods.
//   - Start in multipath. After a warm-up (slow start), try best-path mode
//     (every other subflow backup) for a trial; keep whichever mode's
//     measured goodput is higher by more than the margin, else the one held.
//     Hold it, then try the other again: a recovered path is noticed.
//   - Trials cost goodput when they lose, so a trial losing by twice the
//     margin half-way ends there, and each trial lost in a row doubles the
//     next hold (up to HoldMax): where nothing changes, trials grow rare.
//   - A held mode whose goodput falls below half of what it had when it was
//     chosen cuts the hold short (a path degraded) and starts a trial.
//   - A path on backup carries no data, so nothing shows it recovering. In
//     best-path mode the controller peeks at it every few periods: clears
//     its flag for about one of its round trips and reads the delivery
//     rate it reached. A backup path that peeks faster than the best path,
//     or at PeekGain times its previous peek, starts a trial at once;
//     otherwise best-path holds (to HoldMax) without the periodic trial.
//   - A stall (a subflow whose queue would take longer than StallDrain to
//     drain at its pace, while a sibling idles: the default scheduler's
//     failure mode) switches to best-path mode on the best sibling at once
//     (with ResetStalled: closes the stuck subflow instead); a stalled best
//     path switches back.
package pathctl

import (
	"fmt"
	"time"
)

// phase: the mode is held (chosen, or the warm-up) or on trial.
type phase int

const (
	holding phase = iota
	trying
)

// Engine decides for one connection. It is not safe for concurrent use.
type Engine struct {
	cfg   Config
	mode  Mode
	best  SubflowID
	phase phase
	// the phase's steps, and bytes acked (all subflows) in each step
	steps     int
	stepBytes []uint64
	stepTimes []time.Duration
	held      Mode      // the mode to return to if a trial loses
	heldBest  SubflowID //
	heldRate  float64   // goodput of the held mode, bytes/s, measured before the trial
	chosenAt  float64   // goodput of the held mode when it was chosen (0: not measured yet)
	lost      int       // trials lost in a row: the next hold is Hold << lost (at most HoldMax)
	// afterChange: the trial under way was started by a degradation, so
	// something changed; losing it is no reason to probe less.
	afterChange bool
	length      int // steps the current phase lasts (a trial: once settled)
	// warming: the hold is the start-up's multipath warm-up. It ends
	// early, after two measured periods, once the goodput stops growing:
	// slow start is over, so multipath is measured at what it does. Each
	// period of it costs the most where the best path alone would do better.
	warming   bool
	settled   bool // a trial's measurement has begun
	waited    int  // steps a trial has waited to settle
	last      time.Time
	subflows  map[SubflowID]*subflowState
	sincePeek int         // steps since the last peek (or the hold began)
	peekEvery int         // steps between peeks now: Peek, doubled by each that saw nothing new
	peekTurn  int         // which backup subflow the next peek looks at
	peeked    *peekResult // what the last peek measured, until a step judges it
}

// peekResult is what a peek at a backup subflow measured.
type peekResult struct {
	id        SubflowID
	rate      uint64 // its delivery rate after the peek, bytes/s
	delivered bool   // it delivered bytes during the peek (else rate is from before)
}

// Peeked tells the engine what the peek its last decision asked for
// measured: the subflow's delivery rate after its flag was cleared, and
// whether it delivered anything meanwhile (if not, the rate is the one it
// had before and says nothing new). The next Step judges it.
func (e *Engine) Peeked(id SubflowID, rate uint64, delivered bool) {
	e.peeked = &peekResult{id: id, rate: rate, delivered: delivered}
}

// NewEngine starts in multipath mode, warming up.
func NewEngine(cfg Config) *Engine {
	cfg = cfg.withDefaults()
	return &Engine{cfg: cfg, mode: Multipath, phase: holding, length: cfg.Warmup, warming: true, peekEvery: cfg.Peek, subflows: map[SubflowID]*subflowState{}}
}

// Mode is the current mode.
func (e *Engine) Mode() Mode { return e.mode }

// Step takes the next sample and returns the decision.
func (e *Engine) Step(s Sample) Decision {
	bytes, stalled, idle := e.observe(s)
	peeked := e.peeked // judged at this step or never: the next may be in another mode
	e.peeked = nil
	var dt time.Duration
	if !e.last.IsZero() {
		dt = s.At.Sub(e.last)
	}
	e.last = s.At
	e.steps++
	e.stepBytes = append(e.stepBytes, bytes)
	e.stepTimes = append(e.stepTimes, dt)

	live := e.live(s)
	if len(live) < 2 {
		// Nothing to choose between: multipath, no flags.
		changed := e.mode != Multipath
		e.mode, e.phase, e.length, e.warming = Multipath, holding, e.cfg.Warmup, true
		e.resetPhase()
		return e.decision(live, changed, "fewer than two subflows")
	}

	// A stall acts at once, whatever the phase.
	if e.cfg.ResetStalled && len(stalled) > 0 && len(idle) > 0 && !(e.mode == BestPath && contains(stalled, e.best)) {
		// Close what is stuck (its data goes out on the others) and go on
		// in multipath: the subflow that opens again starts afresh.
		e.restart(Multipath, SubflowID{})
		for _, id := range stalled {
			delete(e.subflows, id)
		}
		d := e.decision(live, true, fmt.Sprintf("stall: %s has a queue it would take more than %v to drain while %s idles; closing it, its data goes out on the others", stalled[0], e.cfg.StallDrain, idle[0]))
		d.Reset = stalled
		return d
	}
	if e.mode == Multipath && len(stalled) > 0 && len(idle) > 0 {
		best := e.bestOf(idle)
		e.restart(BestPath, best)
		return e.decision(live, true, fmt.Sprintf("stall: %s has a queue it would take more than %v to drain while %s idles", stalled[0], e.cfg.StallDrain, best))
	}
	if e.mode == BestPath && contains(stalled, e.best) {
		was := e.best
		e.restart(Multipath, SubflowID{})
		return e.decision(live, true, fmt.Sprintf("stall: best path %s has a queue it would take more than %v to drain", was, e.cfg.StallDrain))
	}
	if e.mode == BestPath && !containsLive(live, e.best) {
		e.restart(Multipath, SubflowID{})
		return e.decision(live, true, "best path closed")
	}

	switch e.phase {
	case holding:
		if e.mode == BestPath && peeked != nil {
			if why := e.recovered(*peeked); why != "" {
				e.lost = 0
				e.startTrial(live)
				e.afterChange = true
				return e.decision(live, true, why+"; trying multipath")
			}
		}
		// A held mode that lost half its goodput ends the hold early. Its
		// goodput when chosen is measured over the hold's first periods
		// when the choice did not measure it (a stall, a move to another
		// best path).
		if e.steps >= e.cfg.Trial {
			r := e.rate(e.cfg.Trial)
			if e.chosenAt == 0 {
				e.chosenAt = r
			} else if r < e.chosenAt/2 {
				was := e.mode
				e.lost = 0
				e.startTrial(live)
				e.afterChange = true
				return e.decision(live, true, fmt.Sprintf("%s degraded: %.0f B/s against %.0f when chosen; trying %s", was, r, e.chosenAt, e.mode))
			}
		}
		peeks := e.mode == BestPath && e.cfg.Peek > 0
		end := e.length
		if peeks {
			end = e.cfg.HoldMax // peeks, not trials, look for a recovered path
		}
		if e.warming && e.plateaued() {
			e.startTrial(live)
			return e.decision(live, true, "trial of "+e.mode.String()+" (warm-up over: goodput stopped growing)")
		}
		if e.steps < end {
			d := e.decision(live, false, "holding")
			if e.sincePeek++; peeks && e.sincePeek >= e.peekEvery {
				e.sincePeek = 0
				d.Peek = d.Backup[e.peekTurn%len(d.Backup)]
				e.peekTurn++
			}
			return d
		}
		e.startTrial(live)
		return e.decision(live, true, "trial of "+e.mode.String())
	case trying:
		if !e.settled {
			// What the mode left queued must drain first: data already on a
			// subflow now backup still blocks the receiver, and windows take
			// a couple of RTTs to adapt. Only then is the trial measured.
			e.waited++
			if e.waited*int(e.cfg.Period) >= 2*int(e.maxSRTT(s)) && (e.backupsDrained(s) || e.waited >= e.cfg.MaxSettle) {
				e.settled = true
				e.resetPhase()
			}
			return e.decision(live, false, "trial settling")
		}
		early := false
		if e.steps < e.length {
			// Half-way, a trial losing by twice the margin cannot win: end
			// it rather than pay for the rest.
			if e.steps < max(2, e.length/2) || e.rate(e.steps) >= e.heldRate*(1-2*e.cfg.Margin) {
				return e.decision(live, false, "trying")
			}
			early = true
		}
		trial := e.rate(e.steps)
		wins := trial > e.heldRate*(1+e.cfg.Margin)
		if e.cfg.PreferBestPath && e.mode == BestPath {
			wins = trial >= e.heldRate*(1-e.cfg.Margin)
		}
		if !early && wins {
			e.chosenAt, e.lost = trial, 0
			e.enter(e.mode, e.best, holding, e.cfg.Hold)
			how := "wins"
			if trial <= e.heldRate*(1+e.cfg.Margin) {
				how = "wins the tie (best-path preferred)"
			}
			d := e.decision(live, false, fmt.Sprintf("%s %s: %.0f B/s against %.0f", e.mode, how, trial, e.heldRate))
			d.Chosen = true
			return d
		}
		mode, best := e.held, e.heldBest
		if mode == BestPath {
			// The multipath trial just measured every path's delivery rate
			// afresh: the best path to return to may be another one now
			// (the held one degraded while a backup path recovered). Only
			// the trial's own periods count: older samples would still show
			// a degraded path at its former rate.
			best = e.bestOfLast(live, max(e.steps, 1))
		}
		ran := e.steps
		if e.afterChange {
			e.lost = 0
		} else {
			e.lost++
		}
		e.chosenAt = e.heldRate
		e.enter(mode, best, holding, e.holdAfterLoss())
		how := "trial"
		if early {
			how = fmt.Sprintf("trial ended after %d of %d periods at", ran, e.cfg.Trial)
		}
		reason := fmt.Sprintf("%s kept: %s %.0f B/s against %.0f", mode, how, trial, e.heldRate)
		if mode == BestPath && best != e.heldBest {
			reason = fmt.Sprintf("best-path kept, on %s now: multipath %s %.0f B/s against %.0f", best, how, trial, e.heldRate)
			e.chosenAt = 0 // measured anew over the next hold's first periods
		}
		if e.length > e.cfg.Hold {
			reason += fmt.Sprintf("; %d lost in a row, holding %d periods", e.lost, e.length)
		}
		d := e.decision(live, true, reason)
		d.Chosen = true
		return d
	}
	return e.decision(live, false, "")
}

// recovered judges a peek: a reason to try multipath again if the backup
// path it measured delivered faster than the best path does, or at
// PeekGain times its previous peek; "" if not, and the next peek waits
// longer (a peek with no ACK in it saw a path as slow as before, or
// slower: nothing new, at the highest cost).
func (e *Engine) recovered(p peekResult) string {
	st := e.subflows[p.id]
	if st == nil || p.id == e.best {
		return ""
	}
	why := ""
	if p.delivered {
		prev := st.peekRate
		st.peekRate = p.rate
		best := e.subflows[e.best].maxRate(e.cfg.RateWindow)
		switch {
		case p.rate > best:
			why = fmt.Sprintf("peek: backup %s delivered %d B/s, more than best path %s (%d)", p.id, p.rate, e.best, best)
		case prev > 0 && float64(p.rate) >= e.cfg.PeekGain*float64(prev):
			why = fmt.Sprintf("peek: backup %s delivered %d B/s, %.1fx its previous peek", p.id, p.rate, float64(p.rate)/float64(prev))
		}
	}
	if why == "" {
		e.peekEvery = min(2*e.peekEvery, e.cfg.PeekMax)
	}
	return why
}

// holdAfterLoss is the hold after e.lost trials lost in a row: Hold
// doubled for each, at most HoldMax.
func (e *Engine) holdAfterLoss() int {
	h := e.cfg.Hold
	for i := 0; i < e.lost && h < e.cfg.HoldMax; i++ {
		h *= 2
	}
	return min(h, e.cfg.HoldMax)
}

// plateaued: the phase has two whole periods behind it (the period ending
// at its first step began before it) and the last brought no more than
// Margin over the one before it.
func (e *Engine) plateaued() bool {
	n := len(e.stepBytes)
	if n < 3 || e.stepTimes[n-2] <= 0 || e.stepTimes[n-1] <= 0 {
		return false
	}
	prev := float64(e.stepBytes[n-2]) / e.stepTimes[n-2].Seconds()
	last := float64(e.stepBytes[n-1]) / e.stepTimes[n-1].Seconds()
	return prev > 0 && last <= prev*(1+e.cfg.Margin)
}

// startTrial measures the held mode over its last steps and switches to
// the other mode.
func (e *Engine) startTrial(live []SubflowID) {
	e.held, e.heldBest = e.mode, e.best
	e.heldRate = e.rate(e.cfg.Trial)
	if e.mode == Multipath {
		e.enter(BestPath, e.bestOf(live), trying, e.cfg.Trial)
	} else {
		e.enter(Multipath, SubflowID{}, trying, e.cfg.Trial)
	}
}

// restart holds mode (on best) after an event that is no trial's outcome
// (a stall, the best path closing): a plain hold, its goodput measured
// afresh, no back-off.
func (e *Engine) restart(m Mode, best SubflowID) {
	e.enter(m, best, holding, e.cfg.Hold)
	e.chosenAt, e.lost = 0, 0
}

func (e *Engine) enter(m Mode, best SubflowID, p phase, length int) {
	e.mode, e.best, e.phase, e.length = m, best, p, length
	e.afterChange, e.warming = false, false
	e.settled, e.waited = p != trying, 0
	e.sincePeek, e.peekEvery = 0, e.cfg.Peek
	e.resetPhase()
}
func (e *Engine) resetPhase() {
	e.steps = 0
	e.stepBytes = e.stepBytes[:0]
	e.stepTimes = e.stepTimes[:0]
}

// rate is the goodput of the phase's last n steps, bytes/s.
func (e *Engine) rate(n int) float64 {
	var b uint64
	var d time.Duration
	for i := len(e.stepBytes) - 1; i >= 0 && i >= len(e.stepBytes)-n; i-- {
		b += e.stepBytes[i]
		d += e.stepTimes[i]
	}
	if d <= 0 {
		return 0
	}
	return float64(b) / d.Seconds()
}
func (e *Engine) decision(live []SubflowID, switched bool, reason string) Decision {
	d := Decision{Mode: e.mode, Best: e.best, Switched: switched, Reason: reason, Trial: e.phase == trying}
	if e.mode == BestPath {
		for _, id := range live {
			if id != e.best {
				d.Backup = append(d.Backup, id)
			}
		}
	}
	return d
}
