// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// kernelWith is the facts of a kernel with BTF, MPTCP enabled and every
// BTF fact present except those named.
func kernelWith(release string, without ...string) facts {
	f := facts{release: release, mptcp: "1", btf: map[btfFact]bool{}}
	for _, ft := range features {
		if ft.btf.name == "" {
			continue
		}
		f.btf[ft.btf] = true
		for _, w := range without {
			if ft.name == w {
				f.btf[ft.btf] = false
			}
		}
	}
	return f
}

// Debian 12's own kernel, as its BTF reads (measured in a VM, docs/kernels.md):
// struct_ops for TCP, no struct_ops links, no bpf_rdonly_cast.
var debian61 = kernelWith("6.1.0-57-amd64", FeatStructOpsLink, FeatRdonlyCast, FeatSchedStructOps)

func TestRefusalNamesFeatureVersionAndRemedy(t *testing.T) {
	f := decide(debian61)
	err := NeedLoad.CheckIn(f)
	if err == nil {
		t.Fatal("load accepted on 6.1")
	}
	for _, want := range []error{ErrUnsupported, ErrNoStructOpsLink, ErrNoRdonlyCast} {
		if !errors.Is(err, want) {
			t.Errorf("load on 6.1: not errors.Is %v: %v", want, err)
		}
	}
	for _, not := range []error{ErrNoBTF, ErrNoStructOps, ErrNoSkcToMPTCP} {
		if errors.Is(err, not) {
			t.Errorf("load on 6.1: errors.Is %v, which it has: %v", not, err)
		}
	}
	msg := err.Error()
	for _, want := range []string{
		"6.1.0-57-amd64", "`mptcp-cc load`",
		"struct_ops links", "Linux 6.4 brings", "bpf_rdonly_cast kfunc, which Linux 6.2 brings",
		// one upgrade, to the newest version among the missing features
		"Linux 6.4 or newer",
		"apt install -t bookworm-backports linux-image-amd64", "linux-generic-hwe-22.04",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "6.2 or newer") {
		t.Errorf("the refusal names two upgrades:\n%s", msg)
	}

	// The policy and set lack only bpf_rdonly_cast there: 6.2 is enough.
	for _, n := range []Need{NeedPolicy, NeedSet} {
		err := n.CheckIn(f)
		if !errors.Is(err, ErrNoRdonlyCast) || errors.Is(err, ErrNoStructOpsLink) {
			t.Errorf("%s on 6.1: %v", n.Command, err)
		}
		if err != nil && !strings.Contains(err.Error(), "Linux 6.2 or newer") {
			t.Errorf("%s on 6.1: the remedy does not name 6.2: %v", n.Command, err)
		}
	}
}

func TestEveryNeedMet(t *testing.T) {
	f := decide(kernelWith("6.12.117+deb12-amd64", FeatSchedStructOps))
	for _, n := range []Need{NeedLoad, NeedPolicy, NeedSet} {
		if err := n.CheckIn(f); err != nil {
			t.Errorf("%s on 6.12: %v", n.Command, err)
		}
	}
	if !f.BTF || !f.CCStructOps || !f.MPTCP || f.SchedStructOps {
		t.Errorf("summary fields: %+v", f)
	}
	for _, v := range f.Verdicts {
		if v.Since == "" || v.What == "" || v.Detail == "" || v.OK == (v.Remedy != "") {
			t.Errorf("verdict %+v: want since, what, detail, and a remedy exactly when missing", v)
		}
	}
}

// Ubuntu 22.04's 5.15: no bpf_skc_to_mptcp_sock either (5.19).
func TestRefusalOnUbuntu2204(t *testing.T) {
	f := decide(kernelWith("5.15.0-91-generic", FeatStructOpsLink, FeatRdonlyCast, FeatSkcToMPTCP, FeatSchedStructOps))
	err := NeedPolicy.CheckIn(f)
	if !errors.Is(err, ErrNoSkcToMPTCP) || !errors.Is(err, ErrNoRdonlyCast) {
		t.Fatalf("policy on 5.15: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "Linux 5.19 brings") || !strings.Contains(msg, "Linux 6.2 or newer") || strings.Contains(msg, "5.19 or newer") {
		t.Errorf("policy on 5.15:\n%s", msg)
	}
}

// Without readable BTF nothing else can be decided: every command is
// refused for BTF, whose remedy is not an upgrade.
func TestNoBTF(t *testing.T) {
	f := decide(facts{release: "6.6.0-custom", btfErr: errors.New("open /sys/kernel/btf/vmlinux: no such file"), mptcp: "0"})
	if f.BTF || f.CCStructOps || f.MPTCP || f.Err == "" {
		t.Errorf("%+v", f)
	}
	for _, n := range []Need{NeedLoad, NeedPolicy, NeedSet} {
		err := n.CheckIn(f)
		if !errors.Is(err, ErrNoBTF) {
			t.Errorf("%s: %v", n.Command, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "CONFIG_DEBUG_INFO_BTF=y") || !strings.Contains(msg, "no such file") {
			t.Errorf("%s:\n%s", n.Command, msg)
		}
	}
	v, _ := f.verdict(FeatMPTCP)
	if v.OK || !strings.Contains(v.Detail, "net.mptcp.enabled=0") || !strings.Contains(v.Remedy, "sysctl -w net.mptcp.enabled=1") {
		t.Errorf("MPTCP disabled: %+v", v)
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"5.19", "6.2", true}, {"6.2", "6.4", true}, {"6.4", "6.2", false}, {"6.10", "6.4", false}, {"6.4", "6.4", false}} {
		if got := versionLess(c.a, c.b); got != c.want {
			t.Errorf("versionLess(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// This machine's kernel (6.18 here, and CI's) has what every command
// needs; Probe reads the kernel's BTF, which needs no privileges.
func TestPreflightPassesHere(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skipf("no kernel BTF here (%v): the preflight refuses, as it should", err)
	}
	f := Probe()
	for _, n := range []Need{NeedLoad, NeedPolicy, NeedSet} {
		if err := n.CheckIn(f); err != nil {
			t.Errorf("%s: %v", n.Command, err)
		}
	}
	if len(f.Verdicts) != len(features) {
		t.Errorf("%d verdicts for %d features", len(f.Verdicts), len(features))
	}
}
