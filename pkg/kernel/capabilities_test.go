// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The capabilities are stated once: the systemd unit grants exactly the
// required and the optional ones, and the error names the required.
func TestCapabilitiesStatedOnce(t *testing.T) {
	unit, err := os.ReadFile("../../deploy/mptcp-cc.service")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(append(slices.Clone(RequiredCapabilities), OptionalCapabilities...)))
	for _, key := range []string{"CapabilityBoundingSet=", "AmbientCapabilities="} {
		found := false
		for _, l := range strings.Split(string(unit), "\n") {
			if v, ok := strings.CutPrefix(l, key); ok {
				found = true
				if got := slices.Sorted(slices.Values(strings.Fields(v))); !slices.Equal(got, want) {
					t.Errorf("the unit's %s%v, want %v (pkg/kernel's RequiredCapabilities and OptionalCapabilities)", key, got, want)
				}
			}
		}
		if !found {
			t.Errorf("the unit has no %s line", key)
		}
	}
	for _, c := range RequiredCapabilities {
		if !strings.Contains(ErrNotRoot.Error(), c) {
			t.Errorf("ErrNotRoot %q does not name %s", ErrNotRoot, c)
		}
	}
}
