// SPDX-License-Identifier: Apache-2.0

// Package cc loads the coupled congestion controls into the kernel, keeps them
// registered after the loading process exits by pinning their struct_ops
// links in bpffs, lists them and unloads them.
//
// The algorithms are pkg/algo's table (each registered by its model in
// pkg/model); their objects are found by name (NAME_bpfel.o, from the
// go:generate lines in gen.go), and loaded by pkg/structops as the
// schedulers are.
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
	"sort"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
	_ "github.com/mptcp-cc/mptcp-cc/pkg/model" // the congestion controls register there
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Algorithm is one coupled congestion control this project ships: its
// entry in pkg/algo's table (Name, ID, Summary, Coupled, Params).
type Algorithm struct{ algo.Info }

// Param names a load-time parameter that only some algorithms read, so
// that one given to an algorithm that ignores it can be refused.
type Param string

// ParamRSFTarget is Params.RSFTarget.
const ParamRSFTarget Param = "rsf_target"

// ReadsParam says whether the algorithm reads p.
func (a Algorithm) ReadsParam(p Param) bool { return a.Reads(string(p)) }

// UsedBy lists, sorted, the algorithms that read p.
func UsedBy(p Param) []string { return algo.Readers(algo.CC, string(p)) }

// DefaultName is the name the kernel lists the algorithm under unless the
// user picks another one.
func (a Algorithm) DefaultName() string { return "mptcp_" + a.Name }

// Algorithms returns every algorithm, in a stable order (pkg/algo's).
func Algorithms() (out []Algorithm) {
	for _, i := range algo.All(algo.CC) {
		out = append(out, Algorithm{i})
	}
	return out
}

// Lookup finds an algorithm by name; the error lists the ones that exist.
func Lookup(name string) (Algorithm, error) {
	i, err := algo.Lookup(algo.CC, name)
	return Algorithm{i}, err
}

// ByID finds an algorithm by its id.
func ByID(id uint32) (Algorithm, bool) {
	i, ok := algo.ByID(algo.CC, id)
	return Algorithm{i}, ok
}

// Names lists the algorithm names, sorted.
func Names() []string {
	n := algo.Names(algo.CC)
	sort.Strings(n)
	return n
}

// family is how a congestion control is loaded, listed and unloaded.
var family = &structops.Family{Kind: algo.CC, Objects: objects, Root: DefaultPinRoot, Maps: pinnedMaps,
	UnloadCmd: "mptcp-cc unload --name %s", ListCmd: "mptcp-cc list",
	Check: checkKernel, IsRegistered: IsRegistered, ErrNameRegistered: ErrNameRegistered}

// Objects lists, sorted, the algorithms this binary has a BPF object for
// (a test checks it is the table).
func Objects() ([]string, error) { return family.ObjectNames() }

// Spec returns the algorithm's compiled BPF collection, its id set.
func (a Algorithm) Spec() (*ebpf.CollectionSpec, error) { return family.Spec(a.Info) }
