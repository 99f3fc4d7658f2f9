// SPDX-License-Identifier: Apache-2.0

package probecc_test

import (
	"bytes"
	"io/fs"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/mptcp-cc/mptcp-cc/lab/probecc"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// Every algorithm has a probe-read object, and it is what it claims to
// be: no reference to bpf_rdonly_cast (which a kernel before 6.2 would
// refuse), its cong_avoid reading through bpf_probe_read_kernel; the
// shipped object of the same source does reference the kfunc, so the
// check tells the two builds apart.
func TestObjectsReadWithoutTheCast(t *testing.T) {
	for _, a := range cc.Algorithms() {
		b, err := fs.ReadFile(probecc.Objects, a.Name+"_bpfel.o")
		if err != nil {
			t.Fatalf("%s: no probe-read object (a go:generate line in gen.go?): %v", a.Name, err)
		}
		probe, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		shipped, err := a.Spec()
		if err != nil {
			t.Fatal(err)
		}
		if !refersTo(shipped, "bpf_rdonly_cast") {
			t.Errorf("%s: the shipped object does not refer to bpf_rdonly_cast: the check below proves nothing", a.Name)
		}
		if refersTo(probe, "bpf_rdonly_cast") {
			t.Errorf("%s: the probe-read object still refers to bpf_rdonly_cast", a.Name)
		}
		if n := probeReads(t, probe); n == 0 {
			t.Errorf("%s: the probe-read object's cong_avoid makes no bpf_probe_read_kernel call", a.Name)
		} else if m := probeReads(t, shipped); m != 0 {
			t.Errorf("%s: the shipped object's cong_avoid calls bpf_probe_read_kernel %d times", a.Name, m)
		}
	}
}

func refersTo(s *ebpf.CollectionSpec, name string) bool {
	_, err := s.Types.AnyTypeByName(name)
	return err == nil
}

// probeReads counts the bpf_probe_read_kernel call sites in cong_avoid.
func probeReads(t *testing.T, s *ebpf.CollectionSpec) int {
	p := s.Programs["mpcc_cong_avoid"]
	if p == nil {
		t.Fatal("no mpcc_cong_avoid program")
	}
	n := 0
	for _, ins := range p.Instructions {
		if ins.IsBuiltinCall() && ins.Constant == int64(asm.FnProbeReadKernel) {
			n++
		}
	}
	return n
}
