// SPDX-License-Identifier: Apache-2.0

package structops

import (
	"os"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
)

// An object without the id variable cannot be given its id, so it is
// refused rather than loaded with id 0 (pkg/abi's object has none).
func TestSpecRefusesObjectWithoutID(t *testing.T) {
	f := &Family{Kind: algo.CC, Objects: os.DirFS("../abi")}
	_, err := f.Spec(algo.Info{Name: "abi", ID: 1})
	if err == nil || !strings.Contains(err.Error(), "has no mpcc_algo_id variable") {
		t.Errorf("Spec of an object without the id: %v, want a refusal naming mpcc_algo_id", err)
	}
	_, err = f.Spec(algo.Info{Name: "nothere", ID: 1})
	if err == nil || !strings.Contains(err.Error(), "no BPF object") {
		t.Errorf("Spec of a missing object: %v", err)
	}
}
