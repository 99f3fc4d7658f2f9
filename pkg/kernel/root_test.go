// SPDX-License-Identifier: Apache-2.0

package kernel_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel/kerneltest"
)

// host is a fixture host: MPTCP in its own namespace and in "lab", none in
// "plain" (a kernel's namespace has no net.mptcp when MPTCP is not built).
func host(t *testing.T, more map[string]string) string {
	return kerneltest.Root(t, kerneltest.MPTCP(""), kerneltest.MPTCP("netns/lab/"), map[string]string{
		"netns/lab/proc/sys/net/mptcp/scheduler":               "redundant\n",
		"netns/plain/proc/sys/net/ipv4/tcp_congestion_control": "reno\n",
		"proc/sys/kernel/osrelease":                            "6.12.117+deb12-amd64\n",
	}, more)
}

func TestSysctlPerNamespace(t *testing.T) {
	host(t, nil)
	for _, c := range []struct{ ns, name, want string }{
		{"", "net.mptcp.scheduler", "default"},
		{"lab", "net.mptcp.scheduler", "redundant"},
		{"plain", "net.ipv4.tcp_congestion_control", "reno"},
	} {
		if got, err := kernel.Sysctl(c.ns, c.name); err != nil || got != c.want {
			t.Errorf("Sysctl(%q, %s) = %q, %v; want %q", c.ns, c.name, got, err, c.want)
		}
	}
	// A namespace without MPTCP: the knob is missing, which is not an
	// error to SysctlExists.
	if _, err := kernel.Sysctl("plain", "net.mptcp.enabled"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("net.mptcp.enabled where MPTCP is missing: %v, want fs.ErrNotExist", err)
	}
	if v, ok, err := kernel.SysctlExists("plain", "net.mptcp.enabled"); v != "" || ok || err != nil {
		t.Errorf("SysctlExists where MPTCP is missing: %q, %v, %v", v, ok, err)
	}
	if v, ok, err := kernel.SysctlExists("lab", "net.mptcp.enabled"); v != "1" || !ok || err != nil {
		t.Errorf("SysctlExists in lab: %q, %v, %v", v, ok, err)
	}
	// A namespace that does not exist, or a name that cannot be one.
	if _, err := kernel.Sysctl("nosuch", "net.mptcp.enabled"); err == nil || !strings.Contains(err.Error(), `"nosuch" does not exist`) {
		t.Errorf("a missing namespace: %v", err)
	}
	if err := kernel.CheckNetns("nosuch"); err == nil || !strings.Contains(err.Error(), "`ip netns list` shows those that do") {
		t.Errorf("CheckNetns of a missing namespace: %v", err)
	}
	if err := kernel.CheckNetns("../lab"); err == nil {
		t.Error("CheckNetns took a path for a name")
	}
	for _, ns := range []string{"", "lab", "plain"} {
		if err := kernel.CheckNetns(ns); err != nil {
			t.Errorf("CheckNetns(%q): %v", ns, err)
		}
	}
	// Writes go to the namespace's own file.
	if err := kernel.SetSysctl("lab", "net.mptcp.scheduler", "default"); err != nil {
		t.Fatal(err)
	}
	if got, _ := kernel.Sysctl("lab", "net.mptcp.scheduler"); got != "default" {
		t.Errorf("after SetSysctl in lab: %q", got)
	}
	if got, _ := kernel.Sysctl("", "net.mptcp.scheduler"); got != "default" {
		t.Errorf("SetSysctl in lab changed the caller's namespace: %q", got)
	}
}

func TestCongestionControlsFromFixture(t *testing.T) {
	root := host(t, map[string]string{"proc/sys/net/ipv4/tcp_available_congestion_control": "reno cubic mptcp_olia\n"})
	if names, err := kernel.CongestionControls(); err != nil || strings.Join(names, ",") != "reno,cubic,mptcp_olia" {
		t.Errorf("CongestionControls: %v, %v", names, err)
	}
	if err := kernel.RequireCongestionControl("mptcp_olia"); err != nil {
		t.Errorf("mptcp_olia is registered: %v", err)
	}
	err := kernel.RequireCongestionControl("mptcp_lia")
	if !errors.Is(err, kernel.ErrNotRegistered) || !strings.Contains(err.Error(), "`mptcp-cc load --algo lia`") {
		t.Errorf("mptcp_lia is not registered: %v", err)
	}
	err = kernel.RequireCongestionControl("bbr")
	if !errors.Is(err, kernel.ErrNotRegistered) || !strings.Contains(err.Error(), "registered: reno cubic mptcp_olia") {
		t.Errorf("bbr is not registered: %v", err)
	}
	kerneltest.Remove(t, root, "proc/sys/net/ipv4/tcp_available_congestion_control")
	err = kernel.RequireCongestionControl("reno")
	if err == nil || !strings.Contains(err.Error(), "cannot read "+kernel.AvailablePath+" to check reno") {
		t.Errorf("without the list: %v", err)
	}
}

func TestAllowCongestionControlFixture(t *testing.T) {
	host(t, map[string]string{"proc/sys/net/ipv4/tcp_allowed_congestion_control": "reno cubic\n"})
	for range 2 { // the second adds nothing
		if err := kernel.AllowCongestionControl("mptcp_lia"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := kernel.Sysctl("", "net.ipv4.tcp_allowed_congestion_control"); got != "reno cubic mptcp_lia" {
		t.Errorf("allowed: %q", got)
	}
}

func verdict(f kernel.Features, name string) kernel.Verdict {
	for _, v := range f.Verdicts {
		if v.Name == name {
			return v
		}
	}
	return kernel.Verdict{}
}

// Probe decides from the fixture's files: its release, net.mptcp.enabled
// and the types in its BTF.
func TestProbeFromFixture(t *testing.T) {
	root := host(t, nil)
	kerneltest.BTF(t, root, "bpf_struct_ops_tcp_congestion_ops", "bpf_iter__tcp")
	f := kernel.Probe()
	if f.Release != "6.12.117+deb12-amd64" || !f.BTF || !f.MPTCP || !f.CCStructOps || f.SchedStructOps {
		t.Errorf("Probe: %+v", f)
	}
	if v := verdict(f, kernel.FeatIterTCP); !v.OK || v.Detail != "bpf_iter__tcp in the kernel's BTF" {
		t.Errorf("iter/tcp: %+v", v)
	}
	// The BTF has no bpf_rdonly_cast: load is refused, naming it.
	if err := kernel.NeedLoad.CheckIn(f); !errors.Is(err, kernel.ErrNoRdonlyCast) || !strings.Contains(err.Error(), "Linux 6.12.117+deb12-amd64") {
		t.Errorf("load without bpf_rdonly_cast: %v", err)
	}

	// MPTCP disabled, then missing (a kernel built without it).
	kerneltest.Write(t, root, "proc/sys/net/mptcp/enabled", "0\n")
	if v := verdict(kernel.Probe(), kernel.FeatMPTCP); v.OK || v.Detail != "net.mptcp.enabled=0 in this network namespace" {
		t.Errorf("MPTCP disabled: %+v", v)
	}
	kerneltest.Remove(t, root, "proc/sys/net/mptcp")
	if v := verdict(kernel.Probe(), kernel.FeatMPTCP); v.OK || !strings.Contains(v.Detail, "the kernel has no MPTCP") {
		t.Errorf("MPTCP missing: %+v", v)
	}

	// BTF that is not BTF, then none at all.
	kerneltest.Write(t, root, "sys/kernel/btf/vmlinux", "not BTF\n")
	if f := kernel.Probe(); f.BTF || f.Err == "" || !errors.Is(kernel.NeedSet.CheckIn(f), kernel.ErrNoBTF) {
		t.Errorf("garbled BTF: %+v", f)
	}
	kerneltest.Remove(t, root, "sys/kernel/btf/vmlinux")
	if f := kernel.Probe(); f.BTF || !strings.Contains(f.Err, "no such file") {
		t.Errorf("no BTF: %+v", f)
	}
}

func TestMIBFromFixture(t *testing.T) {
	host(t, map[string]string{
		"netns/lab/proc/thread-self/net/netstat":   "TcpExt: DelayedACKs\nTcpExt: 3\nMPTcpExt: MPCapableSYNRX DataCsumErr\nMPTcpExt: 7 1\n",
		"netns/plain/proc/thread-self/net/netstat": "TcpExt: DelayedACKs\nTcpExt: 5\n",
		"proc/thread-self/net/netstat":             "MPTcpExt: MPCapableSYNRX DataCsumErr\nMPTcpExt: 7\n",
	})
	if m, err := kernel.MPTCPMIB("lab"); err != nil || m["MPCapableSYNRX"] != 7 || m["DataCsumErr"] != 1 {
		t.Errorf("lab's MPTCP MIB: %v, %v", m, err)
	}
	if m, err := kernel.TCPExtMIB("plain"); err != nil || m["DelayedACKs"] != 5 {
		t.Errorf("plain's TcpExt MIB: %v, %v", m, err)
	}
	if _, err := kernel.MPTCPMIB("plain"); err == nil || !strings.Contains(err.Error(), "a kernel without MPTCP") {
		t.Errorf("MPTCP MIB where MPTCP is missing: %v", err)
	}
	if _, err := kernel.MPTCPMIB(""); err == nil || !strings.Contains(err.Error(), "2 names and 1 values") {
		t.Errorf("a short line: %v", err)
	}
	if _, err := kernel.TCPExtMIB("nosuch"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing namespace: %v", err)
	}
}

func TestHZFromFixture(t *testing.T) {
	root := host(t, map[string]string{"boot/config-6.12.117+deb12-amd64": "CONFIG_HZ_250=y\nCONFIG_HZ=250\n"})
	if hz := kernel.HZ(); hz != 250 {
		t.Errorf("from /boot/config-RELEASE: HZ=%d", hz)
	}
	// /proc/config.gz comes first.
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write([]byte("CONFIG_HZ=1000\n"))
	w.Close()
	kerneltest.Write(t, root, "proc/config.gz", z.String())
	if hz := kernel.HZ(); hz != 1000 {
		t.Errorf("from /proc/config.gz: HZ=%d", hz)
	}
	// Neither says: 0.
	kerneltest.Write(t, root, "proc/config.gz", "not gzip")
	kerneltest.Remove(t, root, "boot/config-6.12.117+deb12-amd64")
	if hz := kernel.HZ(); hz != 0 {
		t.Errorf("no config: HZ=%d", hz)
	}
}

func TestBPFFSMountedFromFixture(t *testing.T) {
	root := host(t, map[string]string{"proc/self/mountinfo": "22 1 0:21 / /sys rw - sysfs sysfs rw\n"})
	if ok, err := kernel.BPFFSMounted("/sys/fs/bpf"); ok || err != nil {
		t.Errorf("nothing on /sys/fs/bpf: %v, %v", ok, err)
	}
	kerneltest.Write(t, root, "proc/self/mountinfo", "22 1 0:21 / /sys rw - sysfs sysfs rw\n40 22 0:30 / /sys/fs/bpf rw,nosuid - bpf bpf rw,mode=700\n")
	if ok, err := kernel.BPFFSMounted("/sys/fs/bpf"); !ok || err != nil {
		t.Errorf("bpffs on /sys/fs/bpf: %v, %v", ok, err)
	}
	// A tmpfs mounted over it hides it.
	kerneltest.Write(t, root, "proc/self/mountinfo", "40 22 0:30 / /sys/fs/bpf rw - bpf bpf rw\n41 40 0:31 / /sys/fs/bpf rw - tmpfs tmpfs rw\n")
	if ok, _ := kernel.BPFFSMounted("/sys/fs/bpf"); ok {
		t.Error("bpffs hidden under a tmpfs counted as mounted")
	}
	kerneltest.Remove(t, root, "proc/self/mountinfo")
	if _, err := kernel.BPFFSMounted("/sys/fs/bpf"); err == nil || !strings.Contains(err.Error(), "reading the mount table") {
		t.Errorf("no mount table: %v", err)
	}
}
