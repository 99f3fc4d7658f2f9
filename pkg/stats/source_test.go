// SPDX-License-Identifier: Apache-2.0

package stats_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

func TestFormatSsthresh(t *testing.T) {
	for v, want := range map[uint32]string{0: "0", 42: "42", 0x7ffffffe: "2147483646", 0x7fffffff: "inf", 0xffffffff: "inf"} {
		if got := stats.FormatSsthresh(v); got != want {
			t.Errorf("FormatSsthresh(%#x) = %q, want %q", v, got, want)
		}
	}
}

// A pin root that does not exist has nothing loaded: no error.
func TestPinnedNothingLoaded(t *testing.T) {
	snap, err := stats.Pinned{Root: filepath.Join(t.TempDir(), "none")}.Read()
	if err != nil || len(snap.Loaded) != 0 || len(snap.Subflows) != 0 {
		t.Fatalf("Read = %+v, %v; want empty, nil", snap, err)
	}
}

func subflowsMap(t *testing.T, raws ...stats.Raw) *ebpf.Map {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: uint32(stats.RawSize), MaxEntries: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	for _, r := range raws {
		if err := m.Put(r.ID, r); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// Maps reads what it can, sorted, and names what it could not read.
func TestMapsErrorPolicy(t *testing.T) {
	testenv.RequireRoot(t)
	m1 := subflowsMap(t, stats.Raw{ID: 1, Token: 9, SubflowID: 2, Flags: 1, Ssthresh: 0x7fffffff}, stats.Raw{ID: 2, Token: 3, SubflowID: 1, Flags: 1})
	m2 := subflowsMap(t, stats.Raw{ID: 3, Token: 9, SubflowID: 1, Flags: 1})
	snap, err := stats.Maps{
		{CC: "t_olia", Algo: "olia", Map: m1},
		{CC: "t_broken", Algo: "lia", Map: nil},
		{CC: "t_lia", Algo: "lia", Map: m2},
	}.Read()
	var ce *stats.CCError
	if !errors.As(err, &ce) || ce.CC != "t_broken" || !strings.Contains(err.Error(), "t_broken") {
		t.Fatalf("error %v: want one naming t_broken", err)
	}
	var got []uint64
	for _, s := range snap.Subflows {
		got = append(got, s.ID)
	}
	if len(got) != 3 || got[0] != 2 || got[1] != 3 || got[2] != 1 {
		t.Fatalf("subflow ids %v, want [2 3 1] (by token, then subflow id)", got)
	}
	if s := snap.Subflows[2]; s.CC != "t_olia" || s.Algo != "olia" || s.CoupledName == "" || !stats.SsthreshIsInfinite(s.Ssthresh) {
		t.Fatalf("decoded %+v", s)
	}
	if len(snap.Loaded) != 3 || snap.Loaded[0].Name != "t_broken" || snap.Count("t_olia") != 2 || snap.Count("t_broken") != 0 {
		t.Fatalf("loaded %+v, counts %d %d", snap.Loaded, snap.Count("t_olia"), snap.Count("t_broken"))
	}
}

// Pinned lists a CC whose map cannot be opened and says which one it is,
// while still reading the others.
func TestPinnedErrorPolicy(t *testing.T) {
	root := testkernel.PinRoot(t)
	good := testkernel.Load(t, root, "olia", cc.Params{})
	bad := testkernel.Load(t, root, "lia", cc.Params{})
	// Unpin the map (and pin it again for the unload at cleanup).
	m, err := cc.OpenSubflows(root, bad)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	pin := filepath.Join(root, bad, "subflows")
	if err := os.Remove(pin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Pin(pin); err != nil {
			t.Error(err)
		}
	})

	snap, err := stats.Pinned{Root: root}.Read()
	var ce *stats.CCError
	if !errors.As(err, &ce) || ce.CC != bad {
		t.Fatalf("error %v: want one naming %s", err, bad)
	}
	if strings.Contains(err.Error(), good) {
		t.Fatalf("error %v names %s, which is readable", err, good)
	}
	if len(snap.Loaded) != 2 {
		t.Fatalf("loaded %+v, want both", snap.Loaded)
	}
	if _, err := stats.ReadAll(root); !errors.As(err, &ce) {
		t.Fatalf("ReadAll error %v: want the same policy", err)
	}
}
