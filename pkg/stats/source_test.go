// SPDX-License-Identifier: Apache-2.0

package stats_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/abi"
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

// subflowsMap makes a subflows map as the congestion controls' object
// declares it (its value size and BTF come from the compiled object, not
// from Go), and fills it with the generated type: the round trip
// Put / read / decode is the one the readers make on a live map.
func subflowsMap(t *testing.T, raws ...abi.Subflow) *ebpf.Map {
	t.Helper()
	a, err := cc.Lookup("olia")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := a.Spec()
	if err != nil {
		t.Fatal(err)
	}
	ms := spec.Maps["subflows"].Copy()
	ms.MaxEntries = 16
	m, err := ebpf.NewMap(ms)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	for _, r := range raws {
		if err := m.Put(r.Id, r); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// Maps reads what it can, sorted, and names what it could not read.
func TestMapsErrorPolicy(t *testing.T) {
	testenv.RequireRoot(t)
	m1 := subflowsMap(t,
		abi.Subflow{Id: 1, Token: 9, SubflowId: 2, Flags: abi.SubflowMPTCP | abi.SubflowPaced, Ssthresh: 0x7fffffff,
			Family: 2, Saddr: [16]byte{10, 0, 1, 1}, Sport: 40000, Daddr: [16]byte{10, 1, 0, 1}, Dport: 80,
			SrttUs: 1500, CaState: 3, Coupled: 1 << 31, UpdatedNs: 77},
		abi.Subflow{Id: 2, Token: 3, SubflowId: 1, Flags: abi.SubflowMPTCP})
	m2 := subflowsMap(t, abi.Subflow{Id: 3, Token: 9, SubflowId: 1, Flags: abi.SubflowMPTCP})
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
	if s := snap.Subflows[2]; !s.MPTCP || s.Backup || !s.Paced || s.Local.String() != "10.0.1.1:40000" || s.Remote.String() != "10.1.0.1:80" ||
		s.SRTT != 1500*time.Microsecond || s.CAState != "recovery" || s.Coupled != 0.5 || s.UpdatedNs != 77 {
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
