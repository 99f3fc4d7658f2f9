// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"fmt"
	"strings"
	"time"
)

// ParamInput is an algorithm's load-time parameters as a user gives them:
// load's flags, an entry of the daemon's configuration, a scenario's cc.
// ParseParams checks them and fills in the defaults, so the three accept
// the same values by the same rules.
type ParamInput struct {
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

// ParamError is a parameter ParseParams refuses. Param names it as the
// configuration and scenario files do (rsf_target; load's flag is
// --rsf-target); Msg says what is wrong and the fix, to follow the field
// ("rsf_target: -1s is out of range ..."). Unread: the value may be fine,
// but the algorithm does not read the parameter (a usage error).
type ParamError struct {
	Param  Param
	Msg    string
	Unread bool
}

func (e *ParamError) Error() string { return string(e.Param) + ": " + e.Msg }

// Bounds of RSF's target delay: the parameter is in microseconds, and an
// hour is already no bound at all on a queue.
const (
	MinRSFTarget = time.Microsecond
	MaxRSFTarget = time.Hour
	// rsfTargetRange is the two, as people write them (1h, not 1h0m0s).
	rsfTargetRange = "1µs to 1h"
)

// ParseParams checks the parameters given for in.Algo and returns them
// with the defaults filled in. An unknown algorithm is Lookup's error; a
// refused parameter is a *ParamError.
func ParseParams(in ParamInput) (Params, error) {
	a, err := Lookup(in.Algo)
	if err != nil {
		return Params{}, err
	}
	p := Params{LISA: in.LISA, Trace: in.Trace, Pacing: in.Pacing, RSFTarget: DefaultRSFTarget}
	if in.RSFTargetSet {
		d := in.RSFTarget
		switch {
		case !in.AllowUnread && !a.ReadsParam(ParamRSFTarget):
			return Params{}, unread(a, ParamRSFTarget)
		case d > 0 && d < MinRSFTarget:
			return Params{}, &ParamError{Param: ParamRSFTarget, Msg: fmt.Sprintf("%v is below the microsecond resolution of the parameter (%s)", d, rsfTargetRange)}
		case d < MinRSFTarget || d > MaxRSFTarget:
			return Params{}, &ParamError{Param: ParamRSFTarget, Msg: fmt.Sprintf("%v is out of range (%s)", d, rsfTargetRange)}
		}
		p.RSFTarget = d
	}
	return p, nil
}

func unread(a Algorithm, p Param) *ParamError {
	users := strings.Join(UsedBy(p), ", ")
	return &ParamError{Param: p, Unread: true,
		Msg: fmt.Sprintf("a parameter of %s only; %s does not read it: drop it (only %s reads it)", users, a.Name, users)}
}
