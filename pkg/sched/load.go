// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
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
func Load(a Algorithm, opts Options) (err error) {
	name, root := opts.Name, opts.PinRoot
	if name == "" {
		name = a.Name
	}
	if root == "" {
		root = DefaultPinRoot
	}
	if err := validName(name); err != nil {
		return err
	}
	if name == "default" {
		return fmt.Errorf("%q is the kernel's own scheduler: %w; pick another with --name", name, ErrNameRegistered)
	}
	if err := kernel.CheckPrivileges(); err != nil {
		return err
	}
	if err := CheckHook(); err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s is %w (pinned at %s): unload it first with `mptcp-cc sched unload %s`", name, ErrAlreadyLoaded, dir, name)
	}
	if IsRegistered(name) {
		return fmt.Errorf("%q: %w by another program; pick another with --name", name, ErrNameRegistered)
	}
	if err := kernel.EnsureBPFFS(root); err != nil {
		return err
	}
	defer func() {
		if err != nil { // a failed load leaves no empty root behind
			kernel.RemoveEmptyRoot(root)
		}
	}()

	raw := abi.SchedParams{Algo: a.ID, Arg: opts.Params.Args}
	if opts.Params.Trace {
		raw.Trace = 1
	}
	return structops.Load(structops.Object{Algo: a.Name, Spec: a.Spec, Params: raw, Maps: pinnedMaps}, name, dir)
}

// Unload unregisters a loaded scheduler and removes its pins. Connections
// that use it keep it until they close (the kernel holds a reference), and
// a namespace whose net.mptcp.scheduler names it gives new connections the
// default scheduler.
func Unload(name, root string) error {
	if root == "" {
		root = DefaultPinRoot
	}
	if err := validName(name); err != nil {
		return err
	}
	if err := kernel.CheckPrivileges(); err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%s is %w (nothing pinned at %s); `mptcp-cc sched list` shows what is", name, ErrNotLoaded, dir)
	}
	return structops.Unregister(dir, func() bool { return IsRegistered(name) })
}
