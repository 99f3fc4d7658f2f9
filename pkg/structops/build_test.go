// SPDX-License-Identifier: Apache-2.0

package structops

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// The ABI hash follows what a reader or a sharing program depends on
// (types, sizes, member layout), and not what a load may choose (the
// number of entries).
func TestABIHash(t *testing.T) {
	u32 := &btf.Int{Name: "u32", Size: 4}
	rec := func(second string) *btf.Struct {
		return &btf.Struct{Name: "rec", Size: 8, Members: []btf.Member{
			{Name: "a", Type: u32, Offset: 0}, {Name: second, Type: u32, Offset: 32}}}
	}
	spec := func(entries uint32, value *btf.Struct, size uint32) *ebpf.CollectionSpec {
		return &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
			"subflows": {Type: ebpf.Hash, KeySize: 8, ValueSize: size, MaxEntries: entries, Value: value},
			"trace":    {Type: ebpf.RingBuf, MaxEntries: 1 << 22},
			"other":    {Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1},
		}}
	}
	hash := func(s *ebpf.CollectionSpec) string {
		t.Helper()
		h, err := ABIHash(s, []string{"trace", "subflows"})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := hash(spec(65536, rec("b"), 8))
	if len(base) != 16 {
		t.Errorf("hash %q: want 16 hex digits", base)
	}
	if h := hash(spec(1024, rec("b"), 8)); h != base {
		t.Errorf("another number of entries changed the hash: %s, %s", base, h)
	}
	other := spec(65536, rec("b"), 8)
	other.Maps["other"].ValueSize = 8 // a map the readers do not share
	if h := hash(other); h != base {
		t.Errorf("a map outside the list changed the hash")
	}
	if h := hash(spec(65536, rec("c"), 8)); h == base {
		t.Errorf("a renamed member kept the hash")
	}
	if h := hash(spec(65536, rec("b"), 16)); h == base {
		t.Errorf("another value size kept the hash")
	}
	if _, err := ABIHash(spec(1, rec("b"), 8), []string{"missing"}); err == nil {
		t.Errorf("a missing map hashed")
	}
}

// Two builds are the same when version, commit and ABI are; the generation
// is the registration's, not the build's.
func TestBuildSame(t *testing.T) {
	a := Build{Version: "v1", Commit: "c", ABI: "x", Generation: 0}
	if b := a; !a.Same(b) {
		t.Error("a build differs from itself")
	}
	if b := (Build{Version: "v1", Commit: "c", ABI: "x", Generation: 3}); !a.Same(b) {
		t.Error("the generation made two builds differ")
	}
	if b := (Build{Version: "v2", Commit: "c", ABI: "x"}); a.Same(b) {
		t.Error("another version is the same build")
	}
}
