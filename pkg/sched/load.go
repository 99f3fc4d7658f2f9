// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"fmt"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Params are the load-time parameters as Go takes them; Load writes them
// as struct mpsch_params (abi.SchedParams).
type Params struct {
	Trace bool      // emit every decision to the trace ring buffer
	Args  [6]uint32 // the algorithm's tunables; 0 keeps its default (each bpf/sched file lists them)
}

// Options say how to load a scheduler.
type Options struct {
	Name    string // name to register under; default the algorithm's name
	PinRoot string // default DefaultPinRoot
	Params  Params
}

// pinnedMaps are the maps Load pins beside the link.
var pinnedMaps = []string{"params", "stats", "trace"}

// Load registers the scheduler with the kernel and pins it, so it stays
// registered after this process exits. Either everything is in place when
// it returns nil, or nothing is: a failure undoes what was done.
func Load(a Algorithm, opts Options) error {
	name := opts.Name
	if name == "" {
		name = a.Name
	}
	if name == "default" {
		return fmt.Errorf("%q is the kernel's own scheduler: %w; pick another with --name", name, ErrNameRegistered)
	}
	raw := abi.SchedParams{Algo: a.ID, Arg: opts.Params.Args}
	if opts.Params.Trace {
		raw.Trace = 1
	}
	return family.Load(a.Info, name, opts.PinRoot, raw, structops.ThisBuild(), nil)
}

// ValidName checks a name to register a scheduler under (the kernel's
// MPTCP_SCHED_NAME_MAX, and the characters pins may have).
func ValidName(name string) error { return family.ValidName(name) }

// Unload unregisters a loaded scheduler and removes its pins. Connections
// that use it keep it until they close (the kernel holds a reference), and
// a namespace whose net.mptcp.scheduler names it gives new connections the
// default scheduler.
func Unload(name, root string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return family.Unload(name, root)
}
