// SPDX-License-Identifier: Apache-2.0

// Package sched loads the MPTCP packet schedulers (bpf/sched/) into a
// kernel that has the BPF scheduler hook, keeps them registered after the
// loading process exits by pinning their struct_ops links in bpffs, lists
// and unloads them, and picks the scheduler of a network namespace.
//
// The schedulers are pkg/algo's table (each registered by its model in
// pkg/schedmodel); their objects are found by name (NAME_bpfel.o, from
// the go:generate lines in gen.go), and loaded by pkg/structops as the
// congestion controls are.
//
// Pin layout, one directory per registered scheduler:
//
//	<root>/<name>/link    the struct_ops link: while it exists, <name> is registered
//	<root>/<name>/params  the load-time parameters
//	<root>/<name>/stats   per-subflow decisions and burst bytes granted
//	<root>/<name>/trace   decision trace ring buffer (used by the tests)
package sched

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
	_ "github.com/mptcp-cc/mptcp-cc/pkg/schedmodel" // the schedulers register there
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Algorithm is one packet scheduler this project ships: its entry in
// pkg/algo's table (Name, ID, Summary).
type Algorithm struct{ algo.Info }

// Algorithms returns every scheduler, in a stable order (pkg/algo's).
func Algorithms() (out []Algorithm) {
	for _, i := range algo.All(algo.Scheduler) {
		out = append(out, Algorithm{i})
	}
	return out
}

// Names lists the schedulers' names, in the order of Algorithms.
func Names() []string { return algo.Names(algo.Scheduler) }

// Lookup finds a scheduler by name; the error lists the ones that exist.
func Lookup(name string) (Algorithm, error) {
	i, err := algo.Lookup(algo.Scheduler, name)
	if err != nil {
		return Algorithm{}, fmt.Errorf("%w %q: choose one of %s", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	return Algorithm{i}, nil
}

// ByID finds a scheduler by its id.
func ByID(id uint32) (Algorithm, bool) {
	i, ok := algo.ByID(algo.Scheduler, id)
	return Algorithm{i}, ok
}

// family is how a scheduler is loaded, listed and unloaded.
var family = &structops.Family{Kind: algo.Scheduler, Objects: objects, Root: DefaultPinRoot, Maps: pinnedMaps,
	UnloadCmd: "mptcp-cc sched unload %s", ListCmd: "mptcp-cc sched list",
	Check: CheckHook, IsRegistered: IsRegistered, ErrNameRegistered: ErrNameRegistered}

// Objects lists, sorted, the schedulers this binary has a BPF object for
// (a test checks it is the table).
func Objects() ([]string, error) { return family.ObjectNames() }

// Spec returns the scheduler's object, as compiled into this binary, its
// id set.
func (a Algorithm) Spec() (*ebpf.CollectionSpec, error) { return family.Spec(a.Info) }
