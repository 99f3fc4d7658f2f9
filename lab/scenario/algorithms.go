// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"fmt"
	"slices"
	"strings"
)

// algorithms are the names of the congestion controls this project ships,
// sorted: pkg/cc's registry, which the scenario language cannot import
// without pulling in the BPF objects. The runner's tests check that the
// two lists agree.
var algorithms = []string{"balia", "lia", "olia", "rsf"}

// Algorithms lists the congestion controls of ours a scenario may name.
func Algorithms() []string { return slices.Clone(algorithms) }

// lookupAlgorithm fails, listing the ones that exist, for a name that is
// not one of ours (as cc.Lookup does).
func lookupAlgorithm(name string) error {
	if slices.Contains(algorithms, name) {
		return nil
	}
	return fmt.Errorf("unknown algorithm %q: choose one of %s", name, strings.Join(algorithms, ", "))
}
