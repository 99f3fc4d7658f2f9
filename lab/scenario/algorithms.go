// SPDX-License-Identifier: Apache-2.0

package scenario

import (
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// algorithms are the names of the congestion controls this project ships,
// sorted: pkg/cc's registry, which the scenario language imports for
// cc.ParseParams (the same parameter rules as load and the daemon).
var algorithms = cc.Names()

// lookupAlgorithm fails, listing the ones that exist, for a name that is
// not one of ours (cc.Lookup's error).
func lookupAlgorithm(name string) error {
	_, err := cc.Lookup(name)
	return err
}
