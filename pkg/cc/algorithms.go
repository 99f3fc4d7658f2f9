// SPDX-License-Identifier: Apache-2.0

// Package cc loads the coupled congestion controls into the kernel, keeps them
// registered after the loading process exits by pinning their struct_ops
// links in bpffs, lists them and unloads them.
//
// Pin layout, one directory per registered congestion control:
//
//	<root>/<name>/link      the struct_ops link: while it exists, <name> is registered
//	<root>/<name>/subflows  live per-subflow state (pkg/stats decodes it)
//	<root>/<name>/params    the load-time parameters
//	<root>/<name>/trace     decision trace ring buffer (used by the tests)
//	<root>/<name>/untracked subflows the subflows map had no room for
//	<root>/<name>/build     what loaded it: version, commit, ABI, generation (structops.Build)
package cc

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
)

// Algorithm is one coupled congestion control this project ships.
type Algorithm struct {
	Name    string // as given to --algo
	ID      uint32 // enum mpcc_algo in bpf/include/cc_types.h, through pkg/abi
	Summary string
	Coupled string // what the exported coupled quantity is
	// Reads are the parameters of its own it reads, of those only some
	// algorithms read (the other Params fields every algorithm reads).
	Reads []Param
	spec  func() (*ebpf.CollectionSpec, error)
}

// Param names a load-time parameter that only some algorithms read, so
// that one given to an algorithm that ignores it can be refused.
type Param string

// ParamRSFTarget is Params.RSFTarget.
const ParamRSFTarget Param = "rsf_target"

// ReadsParam says whether the algorithm reads p.
func (a Algorithm) ReadsParam(p Param) bool {
	for _, r := range a.Reads {
		if r == p {
			return true
		}
	}
	return false
}

// UsedBy lists, sorted, the algorithms that read p.
func UsedBy(p Param) []string {
	var n []string
	for _, a := range algorithms {
		if a.ReadsParam(p) {
			n = append(n, a.Name)
		}
	}
	sort.Strings(n)
	return n
}

// DefaultName is the name the kernel lists the algorithm under unless the
// user picks another one.
func (a Algorithm) DefaultName() string { return "mptcp_" + a.Name }

var algorithms = []Algorithm{
	{Name: "lia", ID: abi.AlgoLIA, Summary: "Linked Increases, RFC 6356", Coupled: "alpha", spec: loadLia},
	{Name: "olia", ID: abi.AlgoOLIA, Summary: "Opportunistic Linked Increases (Khalili et al.)", Coupled: "alpha", spec: loadOlia},
	{Name: "balia", ID: abi.AlgoBALIA, Summary: "Balanced Linked Adaptation (Peng et al.)", Coupled: "alpha", spec: loadBalia},
	{Name: "rsf", ID: abi.AlgoRSF, Summary: "Rent-seeking framework, delay-based (Pokhrel, Williamson)", Coupled: "delay_factor", Reads: []Param{ParamRSFTarget}, spec: loadRsf},
}

// Algorithms returns every algorithm, in a stable order.
func Algorithms() []Algorithm { return append([]Algorithm(nil), algorithms...) }

// Lookup finds an algorithm by name; the error lists the ones that exist.
func Lookup(name string) (Algorithm, error) {
	for _, a := range algorithms {
		if a.Name == name {
			return a, nil
		}
	}
	return Algorithm{}, fmt.Errorf("unknown algorithm %q: choose one of %s", name, strings.Join(Names(), ", "))
}

// ByID finds an algorithm by its BPF id.
func ByID(id uint32) (Algorithm, bool) {
	for _, a := range algorithms {
		if a.ID == id {
			return a, true
		}
	}
	return Algorithm{}, false
}

// Names lists the algorithm names, sorted.
func Names() []string {
	var n []string
	for _, a := range algorithms {
		n = append(n, a.Name)
	}
	sort.Strings(n)
	return n
}

// Spec returns the algorithm's compiled BPF collection.
func (a Algorithm) Spec() (*ebpf.CollectionSpec, error) { return a.spec() }
