// SPDX-License-Identifier: Apache-2.0

package doctor

import (
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel/kerneltest"
)

// fixtureHost is a host made of files (pkg/kernel reads them): MPTCP on in
// its own namespace, off in "off", missing in "plain", on with checksums
// in "csum".
func fixtureHost(t *testing.T, release string) string {
	return kerneltest.Root(t, kerneltest.MPTCP(""), kerneltest.MPTCP("netns/off/"), kerneltest.MPTCP("netns/csum/"), map[string]string{
		"netns/off/proc/sys/net/mptcp/enabled":                 "0\n",
		"netns/csum/proc/sys/net/mptcp/checksum_enabled":       "1\n",
		"netns/plain/proc/sys/net/ipv4/tcp_congestion_control": "cubic\n",
		"proc/sys/kernel/osrelease":                            release + "\n",
		"proc/self/mountinfo":                                  "22 1 0:21 / /sys rw - sysfs sysfs rw\n",
	})
}

// run runs one check and returns its findings.
func run(c check, o Options, r *report) []Finding {
	c(o, r)
	return r.findings
}

func has(fs []Finding, sev Severity, sub string) bool {
	for _, f := range fs {
		if f.Severity == sev && strings.Contains(f.Summary, sub) {
			return true
		}
	}
	return false
}

func TestCheckMPTCPPerNamespace(t *testing.T) {
	fixtureHost(t, "6.12.117+deb12-amd64")
	for _, c := range []struct {
		ns, sub, fix string
		sev          Severity
	}{
		{"", "MPTCP enabled in this network namespace", "", OK},
		{"off", "MPTCP is disabled in network namespace off (net.mptcp.enabled=0)", "ip netns exec off sysctl -w net.mptcp.enabled=1", Fail},
		{"plain", "the kernel has no MPTCP (no net.mptcp.enabled)", "CONFIG_MPTCP=y", Fail},
		{"nosuch", `cannot read net.mptcp.enabled in network namespace nosuch: network namespace "nosuch" does not exist`, "", Fail},
	} {
		fs := run(checkMPTCP, Options{Netns: c.ns}, &report{})
		if len(fs) != 1 || !has(fs, c.sev, c.sub) || !strings.Contains(fs[0].Fix, c.fix) {
			t.Errorf("netns %q: %+v, want one %s finding %q with fix %q", c.ns, fs, c.sev, c.sub, c.fix)
		}
	}
}

// A namespace may not make a loaded CC its default unless the allowed
// list has it; a missing list says nothing.
func TestCheckDefaultsAllowedList(t *testing.T) {
	root := fixtureHost(t, "6.12.117+deb12-amd64")
	kerneltest.Write(t, root, "netns/off/proc/sys/net/ipv4/tcp_allowed_congestion_control", "reno cubic mptcp_lia\n")
	loaded := []cc.Loaded{{Name: "mptcp_lia", Registered: true}, {Name: "mptcp_olia", Registered: true}}
	fs := run(checkDefaults, Options{Netns: "off"}, &report{loaded: loaded})
	if !has(fs, OK, "the default congestion control of network namespace off is cubic") ||
		!has(fs, Warn, "network namespace off cannot make mptcp_olia its default") || has(fs, Warn, "mptcp_lia,") {
		t.Errorf("%+v", fs)
	}
	kerneltest.Write(t, root, "proc/sys/net/ipv4/tcp_congestion_control", "mptcp_lia\n")
	if fs := run(checkDefaults, Options{}, &report{loaded: loaded}); !has(fs, Warn, "the default congestion control of this network namespace is mptcp_lia") {
		t.Errorf("our CC as the default: %+v", fs)
	}
}

// The known fault of 6.18 is avoided by checksums, read per namespace;
// another release has no known fault.
func TestCheckIntegrityByRelease(t *testing.T) {
	fixtureHost(t, "6.18.44")
	if fs := run(checkIntegrity, Options{}, &report{}); !has(fs, Warn, "checksums are off in this network namespace") {
		t.Errorf("6.18, checksums off: %+v", fs)
	}
	if fs := run(checkIntegrity, Options{Netns: "csum"}, &report{}); !has(fs, OK, "DSS checksums are on in network namespace csum") {
		t.Errorf("6.18, checksums on: %+v", fs)
	}
	fixtureHost(t, "6.12.117+deb12-amd64")
	if fs := run(checkIntegrity, Options{}, &report{}); !has(fs, OK, "no MPTCP fault is known to this project for Linux 6.12.117+deb12-amd64") {
		t.Errorf("6.12: %+v", fs)
	}
}

func TestCheckBPFFSFromMountTable(t *testing.T) {
	root := fixtureHost(t, "6.12.117+deb12-amd64")
	if fs := run(checkBPFFS, Options{}, &report{}); !has(fs, Warn, "no bpf filesystem on /sys/fs/bpf") {
		t.Errorf("without bpffs: %+v", fs)
	}
	kerneltest.Write(t, root, "proc/self/mountinfo", "22 1 0:21 / /sys rw - sysfs sysfs rw\n40 22 0:30 / /sys/fs/bpf rw - bpf bpf rw\n")
	if fs := run(checkBPFFS, Options{}, &report{}); !has(fs, OK, "bpffs mounted on /sys/fs/bpf") {
		t.Errorf("with bpffs: %+v", fs)
	}
}
