// SPDX-License-Identifier: Apache-2.0

package pathctl

// The engine's tuning: every knob with its default and why it is that,
// apart from the rule that uses them (engine.go) so the defaults are read
// in one place.

import "time"

// Config tunes the engine. Zero fields take the defaults.
type Config struct {
	Period     time.Duration // between samples (default 500 ms)
	Warmup     int           // periods of multipath before the first trial, at most (default 4; see warming)
	Trial      int           // periods a trial measures, after it settled (default 4)
	MaxSettle  int           // periods a trial may wait to settle at most (default 16)
	Hold       int           // periods a chosen mode is held before the next trial (default 16)
	HoldMax    int           // periods a hold may grow to after trials lost in a row (default 4 x Hold)
	Margin     float64       // a trial must beat the held mode by this fraction (default 0.1)
	RateWindow int           // periods the max delivery-rate filter spans (default 10)
	StallAfter time.Duration // a queue must last this long, and its pace is measured over it, for a stall (default 1 s)
	StallDrain time.Duration // a queue that would take this long to drain at its subflow's pace is a stall (default 8 s)
	MinQueued  uint32        // bytes queued for a stall to count (default 64 KiB)
	// Peek is how often, in periods, best-path mode peeks at a backup
	// subflow (Decision.Peek; default 4). With peeks a best-path hold ends
	// in a trial only when a peek saw a backup path recover, the held path
	// degrades, or the hold reaches HoldMax. NoPeeks (below 0): no peeks,
	// and a trial ends every hold.
	Peek int
	// PeekMax: a peek that saw nothing new doubles the wait for the next,
	// up to PeekMax periods (default 2 x Peek); a new hold starts again at
	// Peek. Each peek sends a window onto a path that was slow when last
	// seen, which the best path's receiver may wait for, so a path that
	// stays degraded is looked at less often, at the price of noticing its
	// recovery up to PeekMax periods late.
	PeekMax int
	// PeekGain: a peek measuring a backup path at this multiple of its
	// previous peek's rate starts a trial (default 2). So does one faster
	// than the best path's windowed-max delivery rate.
	PeekGain float64
	// PreferBestPath gives best-path mode the ties: a best-path trial
	// within Margin of the held multipath mode wins, where it otherwise
	// must beat it by Margin. An application whose rate fits the best path
	// gets the same goodput either way, and in best-path mode no data
	// waits in the receive buffer for a slower path (seed 001's blocking;
	// docs/results/pathctl.md, "DAPS on a stock kernel").
	PreferBestPath bool
	// ResetStalled: answer a stall in multipath mode by closing the stuck
	// subflow and opening it again (Decision.Reset), instead of flagging
	// it backup. The connection then sends the data that was queued on it
	// over its other subflows, where a backup flag leaves it in place and
	// the kernel falls back to that very subflow whenever the others
	// cannot send. Needs the userspace path manager (per connection).
	ResetStalled bool
}

// NoPeeks as Config.Peek turns peeks off.
const NoPeeks = -1

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Period <= 0 {
		c.Period = 500 * time.Millisecond
	}
	def(&c.Warmup, 4)
	def(&c.Trial, 4)
	def(&c.MaxSettle, 16)
	def(&c.Hold, 16)
	def(&c.HoldMax, 4*c.Hold)
	c.HoldMax = max(c.HoldMax, c.Hold)
	def(&c.RateWindow, 10)
	if c.Peek == 0 {
		c.Peek = 4
	}
	if c.PeekMax < c.Peek {
		c.PeekMax = 2 * c.Peek
	}
	if c.PeekGain <= 1 {
		c.PeekGain = 2
	}
	if c.Margin <= 0 {
		c.Margin = 0.1
	}
	if c.StallAfter <= 0 {
		c.StallAfter = time.Second
	}
	if c.StallDrain <= 0 {
		c.StallDrain = 8 * time.Second
	}
	if c.MinQueued == 0 {
		c.MinQueued = 64 << 10
	}
	return c
}
