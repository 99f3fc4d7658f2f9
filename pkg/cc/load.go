// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/ccparams"
)

// Params are the load-time parameters every algorithm accepts
// (ccparams.Params, which says what each is); Load writes them as struct
// mpcc_params (abi.CCParams).
type Params = ccparams.Params

// DefaultRSFTarget is RSF's target queueing delay when none is given
// (ccparams.DefaultRSFTarget).
const DefaultRSFTarget = ccparams.DefaultRSFTarget

// rawParams is the params map's value (struct mpcc_params) for algo.
func rawParams(p Params, algo uint32) abi.CCParams {
	r := abi.CCParams{RsfTargetUs: uint32(p.RSFTarget / time.Microsecond), Algo: algo}
	if p.LISA {
		r.Lisa = 1
	}
	if p.Trace {
		r.Trace = 1
	}
	if p.Pacing {
		r.Pacing = 1
	}
	return r
}

func paramsOf(r abi.CCParams) Params {
	return Params{LISA: r.Lisa != 0, Trace: r.Trace != 0, Pacing: r.Pacing != 0, RSFTarget: time.Duration(r.RsfTargetUs) * time.Microsecond}
}

// Options say how to load an algorithm.
type Options struct {
	Name    string // name to register under; default Algorithm.DefaultName()
	PinRoot string // default DefaultPinRoot
	Params  Params
	// MaxSubflows is how many live subflows the subflows map holds
	// (0: MaxSubflowsTracked). Subflows beyond it run the algorithm as
	// every other, unseen by the readers, and are counted (Loaded.Untracked).
	MaxSubflows uint32
}

// MaxSubflowsTracked is the subflows map's size unless Options say less
// (MPCC_MAX_SUBFLOWS_TRACKED in bpf/include/cc_types.h).
const MaxSubflowsTracked = 65536

// Load registers the algorithm with the kernel and pins it, so it stays
// registered after this process exits. Either everything is in place when it
// returns nil, or nothing is: a failure undoes what was done.
func Load(a Algorithm, opts Options) error {
	name := opts.Name
	if name == "" {
		name = a.DefaultName()
	}
	if opts.MaxSubflows > MaxSubflowsTracked {
		return fmt.Errorf("a subflows map of %d entries: want 1 to %d (0: %d)", opts.MaxSubflows, MaxSubflowsTracked, MaxSubflowsTracked)
	}
	if opts.Params.RSFTarget < 0 || opts.Params.RSFTarget > time.Hour {
		return fmt.Errorf("RSF target delay %v is out of range (0 to 1h)", opts.Params.RSFTarget)
	}
	tune := func(s *ebpf.CollectionSpec) {
		if opts.MaxSubflows > 0 {
			s.Maps["subflows"].MaxEntries = opts.MaxSubflows
		}
	}
	return family.Load(a.Info, name, opts.PinRoot, rawParams(opts.Params, a.ID), ThisBuild(), tune)
}

// Unload unregisters a loaded congestion control and removes its pins.
// Connections that use it keep running: the kernel holds the programs until
// the last socket using them is released.
func Unload(name, root string) error { return family.Unload(name, root) }
