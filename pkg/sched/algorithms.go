// SPDX-License-Identifier: Apache-2.0

// Package sched loads the MPTCP packet schedulers (bpf/sched/) into a
// kernel that has the BPF scheduler hook, keeps them registered after the
// loading process exits by pinning their struct_ops links in bpffs, lists
// and unloads them, and picks the scheduler of a network namespace.
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

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
)

// Algorithm is one packet scheduler this project ships.
type Algorithm struct {
	Name    string // as given to `sched load`, and the name it registers under by default
	ID      uint32 // enum mpsch_algo in bpf/include/sched_types.h, through pkg/abi
	Summary string
	spec    func() (*ebpf.CollectionSpec, error)
}

var algorithms = []Algorithm{
	{Name: "minrtt", ID: abi.SchedMinRTT, Summary: "lowest RTT with window space (the classic default)", spec: loadMinrtt},
	{Name: "rr", ID: abi.SchedRR, Summary: "round-robin over the usable subflows, window or not", spec: loadRr},
	{Name: "redundant", ID: abi.SchedRedundant, Summary: "every usable subflow: new data spread, reinjections duplicated", spec: loadRedundant},
	{Name: "blest", ID: abi.SchedBLEST, Summary: "minrtt that skips a slow subflow predicted to block the fast one (BLEST)", spec: loadBlest},
	{Name: "ecf", ID: abi.SchedECF, Summary: "minrtt that waits for the fast subflow when that finishes earlier (ECF)", spec: loadEcf},
	{Name: "daps", ID: abi.SchedDAPS, Summary: "delay-aware: the fast path holds the data that lands before the slow path's (Sarwar 2013)", spec: loadDaps},
	{Name: "papd", ID: abi.SchedPAPD, Summary: "measured rates choose multipath or the best path alone, per period (draft-zuo-mptcp-degradation)", spec: loadPapd},
	{Name: "weighted", ID: abi.SchedWeighted, Summary: "new data split by operator-given weights per endpoint among the subflows with window space", spec: loadWeighted},
}

// Algorithms returns every scheduler, in a stable order.
func Algorithms() []Algorithm { return append([]Algorithm(nil), algorithms...) }

// Names lists the schedulers' names.
func Names() []string {
	out := make([]string, len(algorithms))
	for i, a := range algorithms {
		out[i] = a.Name
	}
	return out
}

// Lookup finds a scheduler by name; the error lists the ones that exist.
func Lookup(name string) (Algorithm, error) {
	for _, a := range algorithms {
		if a.Name == name {
			return a, nil
		}
	}
	return Algorithm{}, fmt.Errorf("%w %q: choose one of %s", ErrUnknown, name, strings.Join(Names(), ", "))
}

// ByID finds a scheduler by its BPF id.
func ByID(id uint32) (Algorithm, bool) {
	for _, a := range algorithms {
		if a.ID == id {
			return a, true
		}
	}
	return Algorithm{}, false
}

// Spec returns the scheduler's object, as compiled into this binary.
func (a Algorithm) Spec() (*ebpf.CollectionSpec, error) { return a.spec() }
