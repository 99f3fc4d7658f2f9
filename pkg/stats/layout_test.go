// SPDX-License-Identifier: Apache-2.0

package stats_test

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf/btf"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// The Go mirrors of the BPF structs must match the compiled objects, member
// by member, or every read of the maps would be garbage.
func TestLayoutsMatchBTF(t *testing.T) {
	for _, a := range cc.Algorithms() {
		spec, err := a.Spec()
		if err != nil {
			t.Fatal(err)
		}
		check := func(cname string, goSize uintptr, goFields []string) {
			var st *btf.Struct
			if err := spec.Types.TypeByName(cname, &st); err != nil {
				t.Fatalf("%s: %s not in the object's BTF: %v", a.Name, cname, err)
			}
			if uintptr(st.Size) != goSize {
				t.Errorf("%s: struct %s is %d bytes, the Go mirror %d", a.Name, cname, st.Size, goSize)
			}
			if len(st.Members) != len(goFields) {
				t.Errorf("%s: struct %s has %d members, the Go mirror %d", a.Name, cname, len(st.Members), len(goFields))
			}
		}
		check("mpcc_subflow", unsafe.Sizeof(stats.Raw{}), fields(stats.Raw{}))
	}
}

func fields(v any) []string {
	var out []string
	t := reflect.TypeOf(v)
	for i := 0; i < t.NumField(); i++ {
		out = append(out, t.Field(i).Name)
	}
	return out
}
