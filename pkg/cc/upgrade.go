// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"fmt"
	"path/filepath"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// pinnedMaps are the maps a loaded CC pins beside its link, which its
// readers open and an upgrade keeps.
var pinnedMaps = []string{"subflows", "params", "trace", "untracked"}

// ThisBuild is the build record this binary writes (its ABI is filled in
// from the object).
func ThisBuild() structops.Build { return structops.ThisBuild() }

// idGenerationShift: a subflow id is the algorithm's id in the top byte,
// the registration's generation in the next (structops.Build.Generation:
// how many times it was upgraded in place), and a counter below
// (next_id in bpf/include/cc_maps.h). An upgrade starts the new programs'
// counter at the new generation, so their ids never collide with those of
// the subflows the old programs still run, in the map both share.
const idGenerationShift = 48

// Generation is the generation of the build that created the subflow
// with this id.
func Generation(id uint64) uint8 { return uint8(id >> idGenerationShift) }

// Upgraded is the outcome of upgrading one loaded congestion control.
type Upgraded struct {
	Name     string
	Algo     string
	From, To structops.Build
	// Recorded: From was read from the registration's build record (false
	// for one loaded by mptcp-cc 0.1.0 or earlier, which wrote none).
	Recorded bool
	Skipped  bool // already this binary's build
}

// Upgrade replaces the programs of the loaded congestion control name
// with this binary's build of its algorithm, in place and under the same
// name (structops.Upgrade): connections opened from now on run the new
// build; those already open keep the programs they run until they close,
// and share the subflows map, the parameters and the trace with the new
// ones, so readers and metrics go on without a gap. A registration that
// is already this build is skipped unless force.
func Upgrade(name, root string, force bool) (Upgraded, error) {
	if root == "" {
		root = DefaultPinRoot
	}
	u := Upgraded{Name: name}
	if err := kernel.CheckPrivileges(); err != nil {
		return u, err
	}
	l, err := inspect(root, name)
	if err != nil {
		return u, fmt.Errorf("%s: %w", name, err)
	}
	u.Algo, u.From, u.Recorded = l.Algo, l.Build, l.BuildRecorded
	if !l.Registered {
		return u, fmt.Errorf("%s is pinned but not registered: nothing runs it to upgrade; `mptcp-cc unload --name %s` clears the pins", name, name)
	}
	a, err := Lookup(l.Algo)
	if err != nil {
		return u, fmt.Errorf("%s runs an algorithm this build does not have (%q): %w", name, l.Algo, err)
	}
	u.To = ThisBuild()
	if l.Current() && !force {
		u.To = l.Build
		u.Skipped = true
		return u, nil
	}
	obj := structops.Object{Algo: a.Name, Spec: a.Spec, Maps: pinnedMaps}
	prepare := func(spec *ebpf.CollectionSpec, _ structops.Build, gen uint8) error {
		v := spec.Variables["next_id"]
		if v == nil {
			return fmt.Errorf("the %s object has no next_id variable (bpf/include/cc_maps.h)", a.Name)
		}
		return v.Set(uint64(gen) << idGenerationShift)
	}
	_, u.To, err = family.Upgrade(obj, filepath.Join(root, name), u.To, prepare)
	return u, err
}

// ABI is the ABI hash (structops.ABIHash) of the maps this build's
// congestion controls pin: every algorithm's, which are one layout
// (bpf/include/cc_maps.h). A registration whose build record has another
// cannot be upgraded in place.
func ABI() (string, error) {
	var abi string
	for _, a := range Algorithms() {
		spec, err := a.Spec()
		if err != nil {
			return "", err
		}
		h, err := structops.ABIHash(spec, pinnedMaps)
		if err != nil {
			return "", fmt.Errorf("%s: %w", a.Name, err)
		}
		if abi != "" && h != abi {
			return "", fmt.Errorf("the algorithms' pinned maps differ in layout (%s: %s, others %s): bpf/include/cc_maps.h is their one definition", a.Name, h, abi)
		}
		abi = h
	}
	return abi, nil
}
