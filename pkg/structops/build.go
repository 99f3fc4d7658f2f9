// SPDX-License-Identifier: Apache-2.0

package structops

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/mptcp-cc/mptcp-cc/internal/version"
)

// Build says what made a registration: pinned beside it as the map
// "build" (bpffs holds BPF objects only, so the record is a one-entry
// array map's value, JSON padded with NULs). A restarted daemon, `list`
// and `doctor` compare it with their own binary's; `upgrade` replaces the
// programs of a registration whose build is not theirs.
type Build struct {
	Version string `json:"version"` // the binary's git describe
	Commit  string `json:"commit"`
	// ABI is ABIHash of the object's pinned maps: two builds with the same
	// ABI share those maps, so an upgrade keeps them and their readers.
	ABI string `json:"abi"`
	// Generation counts the upgrades of this registration in place: 0 as
	// loaded, one more each time its programs are replaced. An object may
	// use it to keep what its programs allocate apart from the previous
	// build's (the CCs put it in their subflow ids).
	Generation uint8 `json:"generation"`
}

// ThisBuild is the build record this binary writes (its ABI is filled in
// from the object).
func ThisBuild() Build {
	return Build{Version: version.Version, Commit: version.Commit}
}

// Current reports whether a registration's build record (recorded: it has
// one) is this binary's: false when another version loaded it (an upgrade
// replaces it) or none was recorded.
func Current(b Build, recorded bool) bool {
	this := ThisBuild()
	return recorded && b.Version == this.Version && b.Commit == this.Commit
}

// Same reports whether b and o are builds of the same binary.
func (b Build) Same(o Build) bool {
	return b.Version == o.Version && b.Commit == o.Commit && b.ABI == o.ABI
}

const (
	buildPin  = "build"
	buildSize = 512 // bytes of JSON at most
)

// writeBuild pins b as dir/build, replacing what is there: a new pin is
// renamed over the old one, so a reader sees one or the other.
func writeBuild(dir string, b Build) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	if len(data) > buildSize {
		return fmt.Errorf("the build record is %d bytes, more than %d", len(data), buildSize)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "build", Type: ebpf.Array, KeySize: 4, ValueSize: buildSize, MaxEntries: 1})
	if err != nil {
		return fmt.Errorf("creating the build record: %w", err)
	}
	defer m.Close()
	value := make([]byte, buildSize)
	copy(value, data)
	if err := m.Put(uint32(0), value); err != nil {
		return fmt.Errorf("writing the build record: %w", err)
	}
	tmp := filepath.Join(dir, buildPin+"_new") // bpffs refuses names with a dot
	_ = os.Remove(tmp)
	if err := m.Pin(tmp); err != nil {
		return fmt.Errorf("pinning the build record: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, buildPin)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pinning the build record: %w", err)
	}
	return nil
}

// ReadBuild reads the build record of the registration pinned in dir; ok
// is false for a registration made before builds were recorded (mptcp-cc
// 0.1.0 and earlier), and for a record that names no version (the
// schedulers mptcp-cc 0.1.0 loaded: it wrote them an empty build, the ABI
// alone), which is as good as none.
func ReadBuild(dir string) (b Build, ok bool, err error) {
	m, err := ebpf.LoadPinnedMap(filepath.Join(dir, buildPin), &ebpf.LoadPinOptions{ReadOnly: true})
	if errors.Is(err, os.ErrNotExist) {
		return b, false, nil
	}
	if err != nil {
		return b, false, fmt.Errorf("opening its build record: %w", err)
	}
	defer m.Close()
	var value []byte
	if err := m.Lookup(uint32(0), &value); err != nil {
		return b, false, fmt.Errorf("reading its build record: %w", err)
	}
	if i := slices.Index(value, 0); i >= 0 {
		value = value[:i]
	}
	if err := json.Unmarshal(value, &b); err != nil {
		return b, false, fmt.Errorf("its build record %q: %w", value, err)
	}
	return b, b.Version != "", nil
}

// ABIHash is a short hash of the layout of the named maps of spec: their
// types, key and value sizes, flags and the BTF layout of their values
// (names, offsets and sizes of every member), not their sizes in entries,
// which a load may choose. Two objects with the same hash can share the
// maps, and the same readers can read them.
func ABIHash(spec *ebpf.CollectionSpec, maps []string) (string, error) {
	h := sha256.New()
	names := slices.Sorted(slices.Values(maps))
	for _, name := range names {
		ms := spec.Maps[name]
		if ms == nil {
			return "", fmt.Errorf("the object has no map %q", name)
		}
		fmt.Fprintf(h, "map %s: %s key %d value %d flags %#x\n", name, ms.Type, ms.KeySize, ms.ValueSize, ms.Flags)
		if ms.Key != nil {
			writeLayout(h, "key", ms.Key, 0)
		}
		if ms.Value != nil {
			writeLayout(h, "value", ms.Value, 0)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// writeLayout writes what of t a reader depends on: sizes, member names
// and offsets, element counts, recursively (bounded: BTF may be cyclic
// through pointers, which are written as pointers).
func writeLayout(h hash.Hash, label string, t btf.Type, depth int) {
	if depth > 8 {
		fmt.Fprintf(h, "%s: ...\n", label)
		return
	}
	switch t := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		fmt.Fprintf(h, "%s: struct %s size %d\n", label, t.Name, t.Size)
		for _, m := range t.Members {
			fmt.Fprintf(h, "  %s @%d:%d\n", m.Name, m.Offset, m.BitfieldSize)
			writeLayout(h, m.Name, m.Type, depth+1)
		}
	case *btf.Union:
		fmt.Fprintf(h, "%s: union %s size %d\n", label, t.Name, t.Size)
		for _, m := range t.Members {
			fmt.Fprintf(h, "  %s @%d:%d\n", m.Name, m.Offset, m.BitfieldSize)
			writeLayout(h, m.Name, m.Type, depth+1)
		}
	case *btf.Array:
		fmt.Fprintf(h, "%s: array %d\n", label, t.Nelems)
		writeLayout(h, label+"[]", t.Type, depth+1)
	case *btf.Int:
		fmt.Fprintf(h, "%s: int %d %v\n", label, t.Size, t.Encoding)
	case *btf.Enum:
		fmt.Fprintf(h, "%s: enum %d\n", label, t.Size)
	case *btf.Pointer:
		fmt.Fprintf(h, "%s: pointer\n", label)
	default:
		fmt.Fprintf(h, "%s: %T\n", label, t)
	}
}
