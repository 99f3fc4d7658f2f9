// SPDX-License-Identifier: Apache-2.0

package abi

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// shared lists every exported struct with the C type it is generated from.
var shared = []struct {
	c string
	v any
}{
	{"mpcc_params", CCParams{}},
	{"mpcc_subflow", Subflow{}},
	{"mpcc_trace_event", CCTrace{}},
	{"mpcc_conn", CCConn{}},
	{"mpcc_path", CCPath{}},
	{"mpsch_params", SchedParams{}},
	{"mpsch_trace", SchedTrace{}},
	{"mpsch_conn", SchedConn{}},
	{"mpsch_sf", SchedSubflow{}},
	{"mpsch_state", SchedState{}},
	{"mpsch_out", SchedOut{}},
	{"mpsch_sf_stats", SchedSubflowStats{}},
}

// The generated types must lay out as the C types do, in this package's
// object and in every object the loaders ship (pkg/cc, pkg/sched): a
// binding generated from an older header, or an object built with other
// flags, would misread every map. Member by member: size, and each
// field's offset and width.
func TestTypesMatchEveryObject(t *testing.T) {
	own, err := loadAbi()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shared {
		var st *btf.Struct
		if err := own.Types.TypeByName(s.c, &st); err != nil {
			t.Fatalf("struct %s is not in the BTF of bpf/abi.bpf.c: %v", s.c, err)
		}
		checkLayout(t, "bpf/abi.bpf.c", st, reflect.TypeOf(s.v))
	}

	var objects []string
	for _, dir := range []string{"../cc", "../sched"} {
		found, _ := filepath.Glob(filepath.Join(dir, "*_bpfel.o"))
		if len(found) == 0 {
			t.Fatalf("no BPF object in %s: run `make generate`", dir)
		}
		objects = append(objects, found...)
	}
	seen := map[string]int{}
	for _, path := range objects {
		spec, err := ebpf.LoadCollectionSpec(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range shared {
			var st *btf.Struct
			if spec.Types.TypeByName(s.c, &st) != nil {
				continue // not every object uses every type
			}
			seen[s.c]++
			checkLayout(t, path, st, reflect.TypeOf(s.v))
		}
	}
	// The map values must have been compared somewhere, or this test
	// would pass over objects that lost their BTF.
	for _, c := range []string{"mpcc_params", "mpcc_subflow", "mpsch_params", "mpsch_sf_stats", "mpsch_trace"} {
		if seen[c] == 0 {
			t.Errorf("struct %s is in none of %v", c, objects)
		}
	}
}

func checkLayout(t *testing.T, obj string, st *btf.Struct, typ reflect.Type) {
	t.Helper()
	if uintptr(st.Size) != typ.Size() {
		t.Errorf("%s: struct %s is %d bytes, Go's %s %d", obj, st.Name, st.Size, typ, typ.Size())
	}
	var fields []reflect.StructField
	for i := 0; i < typ.NumField(); i++ {
		if f := typ.Field(i); f.Name != "_" {
			fields = append(fields, f)
		}
	}
	if len(fields) != len(st.Members) {
		t.Errorf("%s: struct %s has %d members, Go's %s %d", obj, st.Name, len(st.Members), typ, len(fields))
		return
	}
	for i, m := range st.Members {
		f := fields[i]
		size, err := btf.Sizeof(m.Type)
		if err != nil {
			t.Fatal(err)
		}
		if uintptr(m.Offset.Bytes()) != f.Offset || uintptr(size) != f.Type.Size() {
			t.Errorf("%s: %s.%s is %d bytes at %d, Go's %s.%s %d at %d",
				obj, st.Name, m.Name, size, m.Offset.Bytes(), typ, f.Name, f.Type.Size(), f.Offset)
		}
	}
}

// The enum constants are the C values (spot checks against the header, so
// a renumbering in C shows here as well as in every user of the ids).
func TestEnumValues(t *testing.T) {
	own, err := loadAbi()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]map[string]uint32{
		"mpcc_subflow_flag": {"MPCC_F_MPTCP": SubflowMPTCP, "MPCC_F_BACKUP": SubflowBackup, "MPCC_F_PACED": SubflowPaced},
		"mpcc_trace_kind":   {"MPCC_TRACE_AVOID": TraceAvoid, "MPCC_TRACE_LOSS": TraceLoss, "MPCC_TRACE_LISA": TraceLISA},
		"mpcc_trace_flag":   {"MPCC_TRACE_F_REDUCING": TraceReducing},
		"mpsch_sf_flag": {"SCHED_SF_ACTIVE": SchedSFActive, "SCHED_SF_BACKUP": SchedSFBackup,
			"SCHED_SF_MEMFREE": SchedSFMemFree, "SCHED_SF_SS": SchedSFSlowStart},
	} {
		var e *btf.Enum
		if err := own.Types.TypeByName(name, &e); err != nil {
			t.Fatalf("enum %s is not in the BTF of bpf/abi.bpf.c: %v", name, err)
		}
		if len(e.Values) != len(want) {
			t.Errorf("enum %s has %d values, abi.go exports %d: export the new ones", name, len(e.Values), len(want))
		}
		for _, v := range e.Values {
			w, ok := want[v.Name]
			if !ok {
				t.Errorf("enum %s: %s is not exported by abi.go", name, v.Name)
			} else if uint64(w) != v.Value {
				t.Errorf("enum %s: %s is %d, abi.go says %d", name, v.Name, v.Value, w)
			}
		}
	}
}
