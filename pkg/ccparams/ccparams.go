// SPDX-License-Identifier: Apache-2.0

// Package ccparams is the load-time parameters of the congestion controls
// and the one set of rules for them: load's flags, the daemon's
// configuration and the lab's scenarios all hand what the user wrote to
// Parse. It reads pkg/algo's table, without pkg/cc's BPF objects, so the
// scenario language can use it; pkg/cc loads what it returns.
package ccparams

import (
	"fmt"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
	_ "github.com/mptcp-cc/mptcp-cc/pkg/model" // the congestion controls register there
)

// Params are the load-time parameters every algorithm accepts, as Go
// takes them; Load writes them as struct mpcc_params (abi.CCParams).
type Params struct {
	LISA      bool          // LISA linked slow start for joining subflows
	RSFTarget time.Duration // RSF's target queueing delay d (only RSF reads it)
	Trace     bool          // emit every decision to the trace ring buffer
	// Pacing: each subflow is paced at about its window per RTT (the
	// kernel's TCP pacing) instead of sending in bursts, as the kernel's
	// own CCs do without an fq qdisc. At a drop-tail queue shared with a
	// TCP flow at 1 ms base RTT, two unpaced subflows lost 2.4-5.3 times
	// as many packets per packet sent as the TCP flow, paced 1.7-1.8
	// times, and two subflows came closer to one TCP share. Not the
	// default: four subflows did not gain, and at tens of Gbit/s it costs
	// a third of the goodput (docs/results/fairness.md).
	Pacing bool
}

// DefaultRSFTarget is RSF's target queueing delay when none is given. The
// seed does not fix d; 10 ms is a queue short enough to mark a path as
// uncontended on WAN paths and long enough that the delay noise of a
// virtualised host (~1 ms) does not trip it. docs/algorithms.md discusses it.
const DefaultRSFTarget = 10 * time.Millisecond

// RSFTarget is the name of Params.RSFTarget, the parameter only some
// algorithms read (pkg/algo's Info.Params; cc.ParamRSFTarget).
const RSFTarget = "rsf_target"

// Input is an algorithm's load-time parameters as a user gives them:
// load's flags, an entry of the daemon's configuration, a scenario's cc.
// Parse checks them and fills in the defaults, so the three accept
// the same values by the same rules.
type Input struct {
	Algo                string // the algorithm they are for (Lookup)
	LISA, Trace, Pacing bool
	// RSFTarget is RSF's target delay, when RSFTargetSet says it was
	// given; not given, it is DefaultRSFTarget.
	RSFTarget    time.Duration
	RSFTargetSet bool
	// AllowUnread accepts (and keeps) a parameter that the algorithm does
	// not read, instead of refusing it: the daemon's configuration has
	// always accepted rsf_target on any algorithm, and a file that worked
	// keeps working.
	AllowUnread bool
}

// Error is a parameter Parse refuses. Param names it as the
// configuration and scenario files do (rsf_target; load's flag is
// --rsf-target); Msg says what is wrong and the fix, to follow the field
// ("rsf_target: -1s is out of range ..."). Unread: the value may be fine,
// but the algorithm does not read the parameter (a usage error).
type Error struct {
	Param  string
	Msg    string
	Unread bool
}

func (e *Error) Error() string { return e.Param + ": " + e.Msg }

// Bounds of RSF's target delay: the parameter is in microseconds, and an
// hour is already no bound at all on a queue.
const (
	MinRSFTarget = time.Microsecond
	MaxRSFTarget = time.Hour
	// rsfTargetRange is the two, as people write them (1h, not 1h0m0s).
	rsfTargetRange = "1µs to 1h"
)

// Parse checks the parameters given for in.Algo and returns them with the
// defaults filled in. An unknown algorithm is pkg/algo's Lookup error; a
// refused parameter is an *Error.
func Parse(in Input) (Params, error) {
	a, err := algo.Lookup(algo.CC, in.Algo)
	if err != nil {
		return Params{}, err
	}
	p := Params{LISA: in.LISA, Trace: in.Trace, Pacing: in.Pacing, RSFTarget: DefaultRSFTarget}
	if in.RSFTargetSet {
		d := in.RSFTarget
		switch {
		case !in.AllowUnread && !a.Reads(RSFTarget):
			return Params{}, unread(a, RSFTarget)
		case d > 0 && d < MinRSFTarget:
			return Params{}, &Error{Param: RSFTarget, Msg: fmt.Sprintf("%v is below the microsecond resolution of the parameter (%s)", d, rsfTargetRange)}
		case d < MinRSFTarget || d > MaxRSFTarget:
			return Params{}, &Error{Param: RSFTarget, Msg: fmt.Sprintf("%v is out of range (%s)", d, rsfTargetRange)}
		}
		p.RSFTarget = d
	}
	return p, nil
}

func unread(a algo.Info, p string) *Error {
	users := strings.Join(algo.Readers(algo.CC, p), ", ")
	return &Error{Param: p, Unread: true,
		Msg: fmt.Sprintf("a parameter of %s only; %s does not read it: drop it (only %s reads it)", users, a.Name, users)}
}
