// SPDX-License-Identifier: Apache-2.0

package policy_test

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

func policyRoot(t *testing.T) (ccRoot, proot string) {
	ccRoot = testkernel.PinRoot(t)
	return ccRoot, filepath.Join(filepath.Dir(ccRoot), "mptcp-cc-policy")
}

// v1Cgroup returns a directory of a cgroup v1 hierarchy, or "".
func v1Cgroup(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		for i, x := range f {
			if x == "-" && i+1 < len(f) && f[i+1] == "cgroup" && len(f) > 4 {
				return f[4]
			}
		}
	}
	return ""
}

// Bad input: a clear error naming the problem, and nothing attached or
// pinned.
func TestAttachBadInput(t *testing.T) {
	ccRoot, proot := policyRoot(t)
	name := testkernel.Load(t, ccRoot, "lia", cc.Params{})
	cg := newCgroup(t, "")
	mnt, err := policy.CgroupMount()
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		what string
		rule policy.Rule
		is   error
		says string
	}{
		{"missing cgroup", policy.Rule{Cgroup: cg + "/nope", CC: name}, nil, "does not exist"},
		{"missing relative cgroup", policy.Rule{Cgroup: "mptcp-cc-no-such-cgroup", CC: name}, nil, filepath.Join(mnt, "mptcp-cc-no-such-cgroup") + " does not exist"},
		{"no cgroup", policy.Rule{CC: name}, nil, "no cgroup given"},
		{"relative cgroup leaving the mount", policy.Rule{Cgroup: "../../etc", CC: name}, nil, `contains ".."`},
		{"absolute cgroup with ..", policy.Rule{Cgroup: cg + "/../" + filepath.Base(cg), CC: name}, nil, "name the cgroup directly"},
		{"not a cgroup", policy.Rule{Cgroup: t.TempDir(), CC: name}, policy.ErrNotCgroup, "cgroup v2 hierarchy is mounted at " + mnt},
		{"a file in the cgroup", policy.Rule{Cgroup: filepath.Join(cg, "cgroup.procs"), CC: name}, policy.ErrNotCgroup, "not even a directory"},
		{"our CC, not loaded", policy.Rule{Cgroup: cg, CC: "mptcp_olia"}, policy.ErrNotRegistered, "mptcp-cc load --algo olia"},
		{"unknown CC", policy.Rule{Cgroup: cg, CC: "no_such_cc"}, policy.ErrNotRegistered, "registered: "},
		{"CC name too long", policy.Rule{Cgroup: cg, CC: "abcdefghijklmnopq"}, policy.ErrInvalidRule, "1 to 15 characters"},
		{"no CC", policy.Rule{Cgroup: cg}, policy.ErrInvalidRule, "1 to 15 characters"},
		{"host bits in the prefix", policy.Rule{Cgroup: cg, CC: name, Dst: netip.MustParsePrefix("10.1.2.3/16")}, policy.ErrInvalidRule, "did you mean 10.1.0.0/16"},
	}
	if v1 := v1Cgroup(t); v1 != "" {
		cases = append(cases, struct {
			what string
			rule policy.Rule
			is   error
			says string
		}{"cgroup v1", policy.Rule{Cgroup: v1, CC: name}, policy.ErrCgroupV1, "cgroup v2 hierarchy is mounted at " + mnt})
	} else {
		t.Log("no cgroup v1 hierarchy mounted: the v1 case is not exercised")
	}
	for _, c := range cases {
		err := policy.Attach(c.rule, proot)
		switch {
		case err == nil:
			t.Errorf("%s: attach succeeded", c.what)
		case c.is != nil && !errors.Is(err, c.is):
			t.Errorf("%s: error %q, want %v", c.what, err, c.is)
		case !strings.Contains(err.Error(), c.says):
			t.Errorf("%s: error %q does not say %q", c.what, err, c.says)
		default:
			t.Logf("%s: %v", c.what, err)
		}
	}
	if ids := programsOn(t, cg); len(ids) != 0 {
		t.Errorf("programs attached after failed attaches: %v", ids)
	}
	if list, err := policy.List(proot); err != nil || len(list) != 0 {
		t.Errorf("policies after failed attaches: %+v, %v", list, err)
	}

	// A failure half way (the pin root is not on bpffs, so pinning fails
	// after the program is attached) rolls everything back.
	notBPFFS := t.TempDir()
	err = policy.Attach(policy.Rule{Cgroup: cg, CC: name}, notBPFFS)
	if err == nil {
		t.Fatal("attach with pins on tmpfs succeeded")
	}
	t.Logf("pins on tmpfs: %v", err)
	if ids := programsOn(t, cg); len(ids) != 0 {
		t.Errorf("programs attached after a failed pin: %v", ids)
	}
	if entries, _ := os.ReadDir(notBPFFS); len(entries) != 0 {
		t.Errorf("left in the pin root after a failed attach: %v", entries)
	}

	// Detaching what is not there.
	if err := policy.Detach(cg, proot); !errors.Is(err, policy.ErrNoPolicy) {
		t.Errorf("detach without a policy: %v, want ErrNoPolicy", err)
	}
}

// Rules are added, replaced (keeping their id), listed, removed by CC and by
// id; removing the last one detaches the program. A policy whose cgroup was
// removed shows as detached and is removed by its old path.
func TestRuleManagement(t *testing.T) {
	ccRoot, proot := policyRoot(t)
	name := testkernel.Load(t, ccRoot, "lia", cc.Params{})
	cg := newCgroup(t, "")
	t.Cleanup(func() { _ = policy.Detach(cg, proot) })

	add := func(r policy.Rule) policy.RuleInfo {
		t.Helper()
		r.Cgroup = cg
		info, err := policy.AttachRule(r, proot)
		if err != nil {
			t.Fatalf("attach %+v: %v", r, err)
		}
		return info
	}
	r1 := add(policy.Rule{CC: name})
	r2 := add(policy.Rule{CC: "reno", Dst: netip.MustParsePrefix("10.0.0.0/8"), DstPort: 80})
	r3 := add(policy.Rule{CC: "reno", Dst: netip.MustParsePrefix("2001:db8::/32"), PlainTCP: true})
	if r1.ID != 1 || r2.ID != 2 || r3.ID != 3 {
		t.Fatalf("rule ids %d %d %d, want 1 2 3", r1.ID, r2.ID, r3.ID)
	}
	// Same destination and port: replaced, same id.
	if r := add(policy.Rule{CC: name, Dst: netip.MustParsePrefix("10.0.0.0/8"), DstPort: 80, PlainTCP: true}); r.ID != 2 {
		t.Fatalf("replacing rule 2 gave id %d", r.ID)
	}
	if ids := programsOn(t, cg); len(ids) != 1 {
		t.Fatalf("programs on the cgroup: %v, want one for all rules", ids)
	}

	list, err := policy.List(proot)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	a := list[0]
	if a.Cgroup != cg || !a.Attached || len(a.Rules) != 3 {
		t.Fatalf("policy %+v", a)
	}
	want := []string{name, name + " dst 10.0.0.0/8 dport 80 +tcp", "reno dst 2001:db8::/32 +tcp"}
	for i, r := range a.Rules {
		if r.String() != want[i] || r.ID != uint32(i+1) {
			t.Errorf("rule %d: %d %q, want %q", i, r.ID, r, want[i])
		}
	}

	if n, err := policy.DetachCC(cg, "reno", proot); err != nil || n != 1 {
		t.Fatalf("detach reno rules: %d, %v", n, err)
	}
	if _, err := policy.DetachCC(cg, "reno", proot); !errors.Is(err, policy.ErrNoSuchRule) {
		t.Fatalf("detach reno rules again: %v", err)
	}
	if err := policy.DetachRule(cg, 99, proot); !errors.Is(err, policy.ErrNoSuchRule) {
		t.Fatalf("detach rule 99: %v", err)
	}
	if err := policy.DetachRule(cg, 2, proot); err != nil {
		t.Fatal(err)
	}
	if ids := programsOn(t, cg); len(ids) != 1 {
		t.Fatalf("one rule left, programs: %v", ids)
	}
	if err := policy.DetachRule(cg, 1, proot); err != nil {
		t.Fatal(err)
	}
	if ids := programsOn(t, cg); len(ids) != 0 {
		t.Fatalf("last rule removed, programs still attached: %v", ids)
	}
	if list, _ := policy.List(proot); len(list) != 0 {
		t.Fatalf("last rule removed, policy still listed: %+v", list)
	}

	// A removed cgroup: the kernel detaches the link; list says so and
	// detach by the old path cleans up.
	gone := newCgroup(t, "")
	if err := policy.Attach(policy.Rule{Cgroup: gone, CC: name}, proot); err != nil {
		t.Fatal(err)
	}
	if err := unix.Rmdir(gone); err != nil {
		t.Fatal(err)
	}
	// (The kernel releases a removed cgroup's programs from a work queue.)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		list, err = policy.List(proot)
		if err != nil || len(list) != 1 || list[0].Cgroup != gone {
			t.Fatalf("list after the cgroup was removed: %+v, %v", list, err)
		}
		if !list[0].Attached {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy of a removed cgroup still shows as attached: %+v", list[0])
		}
	}
	if err := policy.Detach(gone, proot); err != nil {
		t.Fatalf("detach a removed cgroup by path: %v", err)
	}
	if list, _ := policy.List(proot); len(list) != 0 {
		t.Fatalf("stale policy still listed: %+v", list)
	}
}

// Nothing is left behind: detaching the last policy (whole, or its last
// rule) removes the emptied pin root, while a root that still holds another
// cgroup's policy stays; a first attach that fails removes the root it
// made, and one whose root existed leaves it.
func TestDetachRemovesRoot(t *testing.T) {
	ccRoot, proot := policyRoot(t)
	name := testkernel.Load(t, ccRoot, "lia", cc.Params{})
	cg1, cg2 := newCgroup(t, ""), newCgroup(t, "")
	t.Cleanup(func() { _ = policy.Detach(cg1, proot); _ = policy.Detach(cg2, proot) })
	exists := func(dir string) bool {
		t.Helper()
		_, err := os.Stat(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}

	if err := policy.Attach(policy.Rule{Cgroup: cg1, CC: name}, proot); err != nil {
		t.Fatal(err)
	}
	if err := policy.Detach(cg1, proot); err != nil {
		t.Fatal(err)
	}
	if exists(proot) {
		t.Errorf("%s is still there after the last policy was detached", proot)
	}

	for _, cg := range []string{cg1, cg2} {
		if err := policy.Attach(policy.Rule{Cgroup: cg, CC: name}, proot); err != nil {
			t.Fatal(err)
		}
	}
	if err := policy.Detach(cg1, proot); err != nil {
		t.Fatal(err)
	}
	if !exists(proot) {
		t.Fatalf("%s was removed while %s's policy is pinned in it", proot, cg2)
	}
	if list, err := policy.List(proot); err != nil || len(list) != 1 || list[0].Cgroup != cg2 || !list[0].Attached {
		t.Fatalf("the policy left: %+v, %v", list, err)
	}
	if err := policy.DetachRule(cg2, 1, proot); err != nil {
		t.Fatal(err)
	}
	if exists(proot) {
		t.Errorf("%s is still there after the last rule of the last policy was removed", proot)
	}
	if !exists(filepath.Dir(proot)) {
		t.Errorf("the bpffs mount %s was removed", filepath.Dir(proot))
	}

	// Pins on tmpfs fail after the root was made: it goes again.
	made := filepath.Join(t.TempDir(), "made")
	if err := policy.Attach(policy.Rule{Cgroup: cg1, CC: name}, made); err == nil {
		t.Fatal("attach with pins on tmpfs succeeded")
	}
	if exists(made) {
		t.Errorf("a failed first attach left the root it made, %s", made)
	}
	had := t.TempDir()
	if err := policy.Attach(policy.Rule{Cgroup: cg1, CC: name}, had); err == nil {
		t.Fatal("attach with pins on tmpfs succeeded")
	}
	if !exists(had) {
		t.Errorf("a failed attach removed the root %s that was there before it", had)
	}
}

// Attaches and detaches racing on one root: each detach of the last policy
// removes the root, while the other process waits for its lock or makes the
// root again; every call must still succeed.
func TestAttachDetachRace(t *testing.T) {
	ccRoot, proot := policyRoot(t)
	name := testkernel.Load(t, ccRoot, "lia", cc.Params{})
	cgs := []string{newCgroup(t, ""), newCgroup(t, "")}
	t.Cleanup(func() {
		for _, cg := range cgs {
			_ = policy.Detach(cg, proot)
		}
	})
	errs := make(chan error, len(cgs))
	for _, cg := range cgs {
		go func() {
			for i := range 30 {
				if err := policy.Attach(policy.Rule{Cgroup: cg, CC: name}, proot); err != nil {
					errs <- fmt.Errorf("attach %d: %w", i, err)
					return
				}
				if err := policy.Detach(cg, proot); err != nil {
					errs <- fmt.Errorf("detach %d: %w", i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range cgs {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(proot); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after every policy was detached: %v", proot, err)
	}
}
