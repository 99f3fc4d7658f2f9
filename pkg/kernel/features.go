// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// The preflight: one verdict per kernel feature the BPF objects need, each
// decided from the kernel's own BTF where that is exact (a kernel's BTF
// lists the types, enum values and kfuncs it was built with), and the
// features each command needs, so that a command on a kernel that lacks one
// refuses before it touches anything, naming the feature, the Linux version
// that brings it and the remedy, instead of failing half-way with a raw
// verifier or map-create error ("map create: invalid argument" on 6.1).
//
// Where each need comes from (grep the BPF sources; keep this in step):
//   - BTF: every object is CO-RE (vmlinux.h, bpf_core_read.h) and struct_ops
//     and kfuncs resolve against the kernel's BTF.
//   - struct_ops for tcp_congestion_ops: bpf/include/cc_skel.h's
//     MPCC_STRUCT_OPS (the congestion controls, bpf/cc/*).
//   - struct_ops links: the same maps are in ".struct_ops.link", for which
//     cilium/ebpf creates the map with BPF_F_LINK and registers it through
//     BPF_LINK_CREATE (pkg/structops); a kernel before 6.4 rejects the flag
//     ("map create: invalid argument").
//   - bpf_rdonly_cast: declared in bpf/include/mptcp.h; called there
//     (mptcp_subflow_ro, mptcp_msk_ro, mptcp_walk_next), in cc_conn.h
//     (mpcc_coupled_sibling, mpcc_collect), cc_lisa.h, policy.bpf.c
//     (sibling_cc) and, through mptcp.h, setcc.bpf.c.
//   - bpf_skc_to_mptcp_sock: policy.bpf.c (which MPTCP connection a subflow
//     belongs to).
//   - iter/tcp: setcc.bpf.c is SEC("iter/tcp").
//
// Helpers every supported kernel has are not probed: bpf_skc_to_tcp_sock
// and bpf_seq_write (5.9), ring buffers (5.8), bpf_probe_read_kernel
// (5.5), bpf_get/setsockopt in sock_ops (4.13) and in iter/tcp (5.12).
// Fields whose size or presence differs between kernels are read
// size-aware in the BPF sources (bpf/include/mptcp.h's mptcp_local_id,
// docs/kernels.md).

// Feature names: the verdicts' Name, what Needs list.
const (
	FeatBTF            = "btf"
	FeatMPTCP          = "mptcp"
	FeatStructOpsCC    = "struct_ops_tcp_cc"
	FeatStructOpsLink  = "struct_ops_link"
	FeatRdonlyCast     = "bpf_rdonly_cast"
	FeatSkcToMPTCP     = "bpf_skc_to_mptcp_sock"
	FeatIterTCP        = "iter_tcp"
	FeatSchedStructOps = "mptcp_sched_struct_ops"
)

// Errors callers can test for (errors.Is) on what Need.Check returns: the
// error is ErrUnsupported and the sentinel of every feature it lacks.
var (
	ErrUnsupported     = errors.New("this kernel lacks a feature mptcp-cc needs")
	ErrNoBTF           = errors.New("the kernel has no BTF")
	ErrNoMPTCP         = errors.New("MPTCP is not enabled")
	ErrNoStructOps     = errors.New("the kernel has no BPF struct_ops for tcp_congestion_ops")
	ErrNoStructOpsLink = errors.New("the kernel has no BPF struct_ops links")
	ErrNoRdonlyCast    = errors.New("the kernel has no bpf_rdonly_cast kfunc")
	ErrNoSkcToMPTCP    = errors.New("the kernel has no bpf_skc_to_mptcp_sock helper")
	ErrNoIterTCP       = errors.New("the kernel has no BPF TCP iterator")
	// ErrNoSchedHook names what is missing and which kernel brings it
	// (docs/kernels.md): no released kernel (checked through 7.3) can
	// register a BPF MPTCP scheduler. sched.ErrNoHook is this error.
	ErrNoSchedHook = errors.New("this kernel has no BPF hook for MPTCP packet schedulers " +
		"(no bpf_struct_ops_mptcp_sched_ops in its BTF; `mptcp-cc version` shows it): " +
		"only a kernel built from the mptcp_net-next development tree's export branch " +
		"has the hook and its kfuncs (net/mptcp/bpf.c), no released Linux (checked through 7.3); " +
		"BPF packet schedulers are experimental (docs/schedulers.md)")
)

// Remedies for the common distributions. Their current kernels have every
// feature: Debian 12's backports and security updates carry 6.12, Ubuntu
// 22.04's HWE kernel is 6.8.
const (
	remedyUpgrade = "Debian 12: install the 6.12 kernel from bookworm-backports " +
		"(`apt install -t bookworm-backports linux-image-amd64`, then reboot into it); " +
		"Ubuntu 22.04: the HWE kernel (`apt install linux-generic-hwe-22.04`, 6.8); " +
		"elsewhere a kernel of Linux %s or newer"
	remedyBTF = "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian, Ubuntu, Fedora and RHEL kernels are)"
	// remedyMPTCP: the sysctl is per network namespace.
	remedyMPTCP = "`sysctl -w net.mptcp.enabled=1` in the namespace, on a kernel built with CONFIG_MPTCP=y"
	remedySched = "no released kernel has it (checked through 7.3): boot a kernel built from " +
		"mptcp_net-next's export branch (docs/schedulers.md says how to check and test one)"
)

// feature is how one verdict is decided: the BTF fact that is exact for
// it, and what to say.
type feature struct {
	name, what, since string
	err               error
	// btf: the fact in the kernel's BTF that says the kernel has it.
	btf btfFact
	// remedy when missing ("" : upgrade to since).
	remedy string
}

// btfFact is one name to look up in the kernel's BTF: a type or kfunc
// (enum == ""), or a value of an enum.
type btfFact struct{ enum, name string }

func (b btfFact) String() string {
	if b.enum != "" {
		return fmt.Sprintf("%s in enum %s", b.name, b.enum)
	}
	return b.name
}

// features, in the order version prints them. The versions are upstream
// Linux's; a distribution's kernel can have backported a feature, which
// the BTF test sees.
var features = []feature{
	{name: FeatBTF, what: "kernel BTF (/sys/kernel/btf/vmlinux)", since: "5.5", err: ErrNoBTF, remedy: remedyBTF},
	{name: FeatMPTCP, what: "MPTCP enabled (net.mptcp.enabled)", since: "5.6", err: ErrNoMPTCP, remedy: remedyMPTCP},
	// BPF_STRUCT_OPS_TYPE(tcp_congestion_ops) names its value type so;
	// bpftool and libbpf look for the same name.
	{name: FeatStructOpsCC, what: "BPF struct_ops for tcp_congestion_ops", since: "5.6", err: ErrNoStructOps,
		btf: btfFact{name: "bpf_struct_ops_tcp_congestion_ops"}},
	// The attach type came with struct_ops links ("bpf: Create links for
	// BPF struct_ops maps", 6.4), with BPF_F_LINK on the map.
	{name: FeatStructOpsLink, what: "BPF struct_ops links (BPF_F_LINK)", since: "6.4", err: ErrNoStructOpsLink,
		btf: btfFact{enum: "bpf_attach_type", name: "BPF_STRUCT_OPS"}},
	// A kfunc is callable by its BTF FUNC; bpf_rdonly_cast is registered
	// for every program type from the version that added it.
	{name: FeatRdonlyCast, what: "the bpf_rdonly_cast kfunc", since: "6.2", err: ErrNoRdonlyCast,
		btf: btfFact{name: "bpf_rdonly_cast"}},
	{name: FeatSkcToMPTCP, what: "the bpf_skc_to_mptcp_sock helper", since: "5.19", err: ErrNoSkcToMPTCP,
		btf: btfFact{enum: "bpf_func_id", name: "BPF_FUNC_skc_to_mptcp_sock"}},
	// The iterator's context type is defined with the iterator.
	{name: FeatIterTCP, what: "the BPF TCP iterator (iter/tcp)", since: "5.9", err: ErrNoIterTCP,
		btf: btfFact{name: "bpf_iter__tcp"}},
	{name: FeatSchedStructOps, what: "the BPF MPTCP scheduler hook (mptcp_sched_ops)", since: "mptcp_net-next only", err: ErrNoSchedHook,
		btf: btfFact{name: "bpf_struct_ops_mptcp_sched_ops"}, remedy: remedySched},
}

// Verdict is one feature's answer.
type Verdict struct {
	Name   string `json:"name"`
	What   string `json:"what"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`           // what decided it
	Since  string `json:"since"`            // the Linux version that brings it
	Remedy string `json:"remedy,omitempty"` // what to do, when it is missing
}

// Features is what this kernel offers the project, as `mptcp-cc version`
// reports it.
type Features struct {
	Release string `json:"release"`
	// The first fields are the summary `version --json` has always
	// carried; Verdicts has every feature.
	BTF            bool `json:"btf"`
	CCStructOps    bool `json:"tcp_congestion_ops_struct_ops"`
	MPTCP          bool `json:"mptcp"`
	SchedStructOps bool `json:"mptcp_sched_struct_ops"`
	// Err says why BTF could not be read, if it could not.
	Err      string    `json:"error,omitempty"`
	Verdicts []Verdict `json:"features"`
}

// facts is what the verdicts are decided from, apart so that tests can
// feed any kernel.
type facts struct {
	release string
	btfErr  error            // why the kernel's BTF could not be read
	btf     map[btfFact]bool // each feature's fact, looked up
	mptcp   string           // net.mptcp.enabled, "" when absent
}

// Probe reads the kernel's features. It needs no privileges.
func Probe() Features {
	f := facts{release: Release(), btf: map[btfFact]bool{}}
	if v, err := Sysctl("", "net.mptcp.enabled"); err == nil {
		f.mptcp = v
	}
	spec, err := kernelBTF()
	if err != nil {
		f.btfErr = err
	} else {
		for _, ft := range features {
			if ft.btf.name != "" {
				f.btf[ft.btf] = hasFact(spec, ft.btf)
			}
		}
	}
	return decide(f)
}

// kernelBTF is the kernel's BTF: on a host as cilium/ebpf finds it
// (/sys/kernel/btf/vmlinux, else a vmlinux in the usual places), in a
// fixture its sys/kernel/btf/vmlinux.
func kernelBTF() (*btf.Spec, error) {
	if onHost() {
		return btf.LoadKernelSpec()
	}
	return btf.LoadSpec(file("/sys/kernel/btf/vmlinux"))
}

func hasFact(spec *btf.Spec, b btfFact) bool {
	if b.enum == "" {
		_, err := spec.AnyTypeByName(b.name)
		// More than one type of the name is still the name.
		return err == nil || !errors.Is(err, btf.ErrNotFound)
	}
	var e *btf.Enum
	if err := spec.TypeByName(b.enum, &e); err != nil {
		return false
	}
	return slices.ContainsFunc(e.Values, func(v btf.EnumValue) bool { return v.Name == b.name })
}

// decide turns the facts into verdicts.
func decide(f facts) Features {
	out := Features{Release: f.release}
	if f.btfErr != nil {
		out.Err = f.btfErr.Error()
	}
	for _, ft := range features {
		v := Verdict{Name: ft.name, What: ft.what, Since: ft.since}
		switch {
		case ft.name == FeatBTF:
			v.OK = f.btfErr == nil
			v.Detail = "readable"
			if !v.OK {
				v.Detail = f.btfErr.Error()
			}
		case ft.name == FeatMPTCP:
			v.OK = f.mptcp == "1"
			switch f.mptcp {
			case "":
				v.Detail = "no /proc/sys/net/mptcp/enabled: the kernel has no MPTCP"
			case "1":
				v.Detail = "net.mptcp.enabled=1"
			default:
				v.Detail = "net.mptcp.enabled=" + f.mptcp + " in this network namespace"
			}
		case f.btfErr != nil:
			v.Detail = "unknown: the kernel's BTF is unreadable"
		default:
			v.OK = f.btf[ft.btf]
			if v.OK {
				v.Detail = ft.btf.String() + " in the kernel's BTF"
			} else {
				v.Detail = "no " + ft.btf.String() + " in the kernel's BTF"
			}
		}
		if !v.OK {
			v.Remedy = ft.remedy
			if v.Remedy == "" {
				v.Remedy = fmt.Sprintf(remedyUpgrade, ft.since)
			}
		}
		out.Verdicts = append(out.Verdicts, v)
	}
	out.BTF = out.ok(FeatBTF)
	out.CCStructOps = out.ok(FeatStructOpsCC)
	out.MPTCP = out.ok(FeatMPTCP)
	out.SchedStructOps = out.ok(FeatSchedStructOps)
	return out
}

func (f Features) verdict(name string) (Verdict, bool) {
	i := slices.IndexFunc(f.Verdicts, func(v Verdict) bool { return v.Name == name })
	if i < 0 {
		return Verdict{}, false
	}
	return f.Verdicts[i], true
}

func (f Features) ok(name string) bool {
	v, found := f.verdict(name)
	return found && v.OK
}

// Need is what one command needs of the kernel.
type Need struct {
	Command  string   // the command that needs it: "load"
	Does     string   // what it does, for the refusal: "load the congestion controls"
	Features []string // Feat* names
}

// What each command needs (the BPF sources each loads: see the list at the
// top of this file). MPTCP being enabled is not among them: the objects
// load without it, and it is a per-namespace switch.
var (
	// NeedLoad: the congestion controls (bpf/cc/*).
	NeedLoad = Need{"load", "load the coupled congestion controls", []string{FeatBTF, FeatStructOpsCC, FeatStructOpsLink, FeatRdonlyCast}}
	// NeedPolicy: bpf/policy.bpf.c.
	NeedPolicy = Need{"policy attach", "attach a congestion control policy", []string{FeatBTF, FeatSkcToMPTCP, FeatRdonlyCast}}
	// NeedSet: bpf/setcc.bpf.c.
	NeedSet = Need{"set", "switch a live connection's congestion control", []string{FeatBTF, FeatIterTCP, FeatRdonlyCast}}
)

// Check probes this kernel and fails, naming every missing feature, when
// it cannot do what n needs.
func (n Need) Check() error { return n.CheckIn(Probe()) }

// CheckIn is Check against features already probed.
func (n Need) CheckIn(f Features) error {
	e := &UnsupportedError{Need: n, Release: f.Release}
	for _, name := range n.Features {
		v, found := f.verdict(name)
		if !found {
			panic("kernel: a Need names an unknown feature " + name)
		}
		if !v.OK {
			e.Missing = append(e.Missing, v)
		}
	}
	if len(e.Missing) == 0 {
		return nil
	}
	return e
}

// UnsupportedError is a command refused for the features the kernel lacks.
type UnsupportedError struct {
	Need    Need
	Release string
	Missing []Verdict
}

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "this kernel (Linux %s) cannot %s (`mptcp-cc %s`): it lacks", e.Release, e.Need.Does, e.Need.Command)
	for i, v := range e.Missing {
		sep := ";"
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s, which Linux %s brings (%s)", sep, v.What, v.Since, v.Detail)
	}
	fmt.Fprintf(&b, ". Remedy: %s", strings.Join(remedies(e.Missing), "; and "))
	return b.String()
}

// Is makes errors.Is see ErrUnsupported and each missing feature's sentinel.
func (e *UnsupportedError) Is(target error) bool {
	if target == ErrUnsupported {
		return true
	}
	for _, v := range e.Missing {
		for _, ft := range features {
			if ft.name == v.Name && ft.err == target {
				return true
			}
		}
	}
	return false
}

// remedies says what to do once per kind: the features a newer kernel
// brings need one upgrade, to the newest version among them.
func remedies(missing []Verdict) []string {
	var out []string
	newest := ""
	for _, v := range missing {
		ft := features[slices.IndexFunc(features, func(ft feature) bool { return ft.name == v.Name })]
		if ft.remedy != "" {
			if !slices.Contains(out, ft.remedy) {
				out = append(out, ft.remedy)
			}
			continue
		}
		if newest == "" || versionLess(newest, ft.since) {
			newest = ft.since
		}
	}
	if newest != "" {
		out = append(out, fmt.Sprintf(remedyUpgrade, newest))
	}
	return out
}

// versionLess compares "major.minor" versions.
func versionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	return pa[0] < pb[0] || pa[0] == pb[0] && pa[1] < pb[1]
}

func versionParts(v string) [2]int {
	var p [2]int
	for i, s := range strings.SplitN(v, ".", 2) {
		p[i], _ = strconv.Atoi(s)
	}
	return p
}
