// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"slices"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
)

// The scenario language keeps its own list of our algorithms, since it
// cannot import pkg/cc (the BPF objects); the runner loads them from
// pkg/cc, so the two lists must agree.
func TestScenarioKnowsTheAlgorithms(t *testing.T) {
	if got, want := scenario.Algorithms(), cc.Names(); !slices.Equal(got, want) {
		t.Errorf("scenario knows %v, pkg/cc has %v: update lab/scenario/algorithms.go", got, want)
	}
}
