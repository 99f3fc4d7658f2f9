// SPDX-License-Identifier: Apache-2.0

package bpfreno_test

import (
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/lab/bpfreno"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// TestRegisterAndClose: the BPF Reno registers under the name asked for,
// refuses a taken name, and is gone after Close.
func TestRegisterAndClose(t *testing.T) {
	testenv.RequireRoot(t)
	name := testenv.Unique("brt")
	r, err := bpfreno.Register(name)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			r.Close()
		}
	}()
	if !kernel.HasCongestionControl(name) {
		t.Fatalf("%s is not in the kernel's list after Register", name)
	}
	if _, err := bpfreno.Register(name); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("registering %s twice: got %v, want an error that says it is already registered", name, err)
	}
	if _, err := bpfreno.Register("a_name_of_17_byte"); err == nil || !strings.Contains(err.Error(), "1 to 15 bytes") {
		t.Fatalf("a 17-byte name: got %v, want an error that names the limit", err)
	}
	closed = true
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if kernel.HasCongestionControl(name) {
		t.Fatalf("%s is still registered after Close", name)
	}
}

// TestRegisterFloorBesideReno: the floor (an empty cong_avoid) registers
// on its own name beside a BPF Reno, each from its own map of the object,
// and each Close unregisters only its own.
func TestRegisterFloorBesideReno(t *testing.T) {
	testenv.RequireRoot(t)
	reno, err := bpfreno.Register(testenv.Unique("brr"))
	if err != nil {
		t.Fatal(err)
	}
	defer reno.Close()
	floor, err := bpfreno.RegisterFloor(testenv.Unique("brf"))
	if err != nil {
		t.Fatal(err)
	}
	if !kernel.HasCongestionControl(floor.Name) || !kernel.HasCongestionControl(reno.Name) {
		t.Fatalf("registered %s and %s, the kernel has %v", reno.Name, floor.Name, kernel.HasCongestionControl(floor.Name))
	}
	if err := floor.Close(); err != nil {
		t.Fatal(err)
	}
	if kernel.HasCongestionControl(floor.Name) || !kernel.HasCongestionControl(reno.Name) {
		t.Fatalf("after the floor's Close: floor registered %v, Reno registered %v; want false, true",
			kernel.HasCongestionControl(floor.Name), kernel.HasCongestionControl(reno.Name))
	}
}
