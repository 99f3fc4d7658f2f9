// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// mptcp_subflow_context.local_id is u8 up to Linux 6.5 and s16 after
// (cc_obs.h reads it with the size the kernel declares). This kernel has
// s16; each CC also loads with its CO-RE relocations done against this
// kernel's BTF with the field declared u8, as an older kernel's BTF has
// it, so the u8 arm (the ___old flavour) is the one the verifier walks: a
// flavour that no longer relocated would be poisoned and rejected here.
// What it cannot show: the verifier still checks the loads against this
// kernel's s16 field, so the 2-byte read that 6.2 rejected passes here
// too; only a kernel with the u8 field shows that (docs/kernels.md).
func TestLocalIDEitherSize(t *testing.T) {
	testenv.RequireRoot(t)
	kspec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	old := kspec.Copy()
	var ctx *btf.Struct
	if err := old.TypeByName("mptcp_subflow_context", &ctx); err != nil {
		t.Skipf("no MPTCP in this kernel: %v", err)
	}
	if !setMember(ctx.Members, "local_id", &btf.Int{Name: "u8", Size: 1}) {
		t.Fatal("mptcp_subflow_context has no local_id")
	}
	for _, a := range cc.Algorithms() {
		for _, k := range []struct {
			name string
			spec *btf.Spec
		}{{"s16", kspec}, {"u8", old}} {
			spec, err := a.Spec()
			if err != nil {
				t.Fatal(err)
			}
			coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{KernelTypes: k.spec}})
			if err != nil {
				t.Errorf("%s with local_id %s: %v", a.Name, k.name, err)
				continue
			}
			coll.Close()
		}
	}
}

// setMember gives the named member, which may sit in an anonymous struct
// or union (the kernel's struct_group), another type.
func setMember(ms []btf.Member, name string, typ btf.Type) bool {
	for i := range ms {
		if ms[i].Name == name {
			ms[i].Type = typ
			return true
		}
		if ms[i].Name != "" {
			continue
		}
		switch c := btf.UnderlyingType(ms[i].Type).(type) {
		case *btf.Struct:
			if setMember(c.Members, name, typ) {
				return true
			}
		case *btf.Union:
			if setMember(c.Members, name, typ) {
				return true
			}
		}
	}
	return false
}
