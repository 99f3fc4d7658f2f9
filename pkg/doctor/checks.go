// SPDX-License-Identifier: Apache-2.0

package doctor

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// sysctl reads a sysctl ("net.mptcp.enabled") in the checked namespace;
// ok is false where the kernel has no such knob.
func sysctl(o Options, name string) (value string, ok bool, err error) {
	return kernel.SysctlExists(o.Netns, name)
}

func checkKernel(o Options, r *report) {
	f := r.features
	for _, n := range []struct {
		need kernel.Need
		sev  Severity
	}{{kernel.NeedLoad, Fail}, {kernel.NeedPolicy, Warn}, {kernel.NeedSet, Warn}} {
		if err := n.need.CheckIn(f); err != nil {
			r.add(Finding{Check: "kernel", Severity: n.sev, Summary: err.Error(), Doc: "docs/kernels.md"})
			continue
		}
		r.add(Finding{Check: "kernel", Severity: OK, Summary: fmt.Sprintf("Linux %s can %s (%s)", f.Release, n.need.Does, n.need.Command)})
	}
}

func checkPrivileges(o Options, r *report) {
	if err := r.privErr; err != nil {
		r.add(Finding{Check: "privileges", Severity: Info,
			Summary: "not run with the privileges mptcp-cc needs to load (" + err.Error() + "): the loaded algorithms could not be read",
			Fix:     "run `sudo mptcp-cc doctor` to check them too"})
		return
	}
	r.add(Finding{Check: "privileges", Severity: OK, Summary: "running with the privileges to load, pin and attach"})
}

func checkBPFFS(o Options, r *report) {
	if mounted, err := kernel.BPFFSMounted("/sys/fs/bpf"); err != nil || !mounted {
		r.add(Finding{Check: "bpffs", Severity: Warn, Summary: "no bpf filesystem on /sys/fs/bpf: pins (what keeps an algorithm loaded after mptcp-cc exits) go there",
			Fix: "`mptcp-cc load` mounts it when it can (systemd does at boot); in a container, mount the host's /sys/fs/bpf", Doc: "docs/troubleshooting.md"})
		return
	}
	r.add(Finding{Check: "bpffs", Severity: OK, Summary: "bpffs mounted on /sys/fs/bpf"})
}

func checkMPTCP(o Options, r *report) {
	v, ok, err := sysctl(o, "net.mptcp.enabled")
	switch {
	case err != nil:
		r.add(Finding{Check: "mptcp", Severity: Fail, Summary: fmt.Sprintf("cannot read net.mptcp.enabled in %s: %v", where(o), err)})
	case !ok:
		r.add(Finding{Check: "mptcp", Severity: Fail, Summary: "the kernel has no MPTCP (no net.mptcp.enabled)", Fix: "a kernel built with CONFIG_MPTCP=y (every major distribution's since Linux 5.6)"})
	case v != "1":
		r.add(Finding{Check: "mptcp", Severity: Fail, Summary: fmt.Sprintf("MPTCP is disabled in %s (net.mptcp.enabled=%s)", where(o), v),
			Fix: inNS(o, "sysctl -w net.mptcp.enabled=1")})
	default:
		r.add(Finding{Check: "mptcp", Severity: OK, Summary: fmt.Sprintf("MPTCP enabled in %s", where(o))})
	}
}

func checkPathManager(o Options, r *report) {
	if pm, ok, _ := sysctl(o, "net.mptcp.path_manager"); ok && pm != "kernel" {
		r.add(Finding{Check: "path manager", Severity: Info, Summary: fmt.Sprintf("the %s path manager decides the subflows in %s (net.mptcp.path_manager): mptcp-cc does not check its setup", pm, where(o)), Doc: "docs/mptcpd.md"})
		return
	}
	c, err := mptcpnl.DialNS(o.Netns)
	if err != nil {
		r.add(Finding{Check: "path manager", Severity: Warn, Summary: fmt.Sprintf("cannot ask the in-kernel path manager of %s: %v", where(o), err)})
		return
	}
	defer c.Close()
	eps, err1 := c.Endpoints()
	lim, err2 := c.Limits()
	if err := errors.Join(err1, err2); err != nil {
		r.add(Finding{Check: "path manager", Severity: Warn, Summary: fmt.Sprintf("reading the endpoints and limits of %s: %v", where(o), err)})
		return
	}
	var subflow, signal int
	for _, e := range eps {
		if e.Flags&mptcpnl.FlagSubflow != 0 {
			subflow++
		}
		if e.Flags&mptcpnl.FlagSignal != 0 {
			signal++
		}
	}
	switch {
	case lim.Subflows == 0:
		r.add(Finding{Check: "path manager", Severity: Fail,
			Summary: fmt.Sprintf("every MPTCP connection in %s has one subflow: the limit of extra subflows is 0, so it neither opens nor accepts a second one, and one subflow runs as plain Reno would", where(o)),
			Fix:     inNS(o, "ip mptcp limits set subflows 2") + " (on both ends)", Doc: "README.md#quick-start-one-connection-two-subflows-coupled"})
	case subflow == 0:
		r.add(Finding{Check: "path manager", Severity: Warn,
			Summary: fmt.Sprintf("a connection opened from %s gets one subflow: no endpoint has the subflow flag (as a server it accepts up to %d joins, and that is enough where only the clients open subflows)", where(o), lim.Subflows),
			Fix:     inNS(o, "ip mptcp endpoint add ADDR dev DEV subflow") + " for each extra local address", Doc: "README.md#quick-start-one-connection-two-subflows-coupled"})
	default:
		extra := min(uint32(subflow), lim.Subflows)
		r.add(Finding{Check: "path manager", Severity: OK,
			Summary: fmt.Sprintf("a connection opened from %s can open %d extra subflow(s) (%d subflow endpoint(s), limit %d); %d accepted as a server", where(o), extra, subflow, lim.Subflows, lim.Subflows)})
	}
	if signal > 0 && lim.AddAddrAccepted == 0 {
		r.add(Finding{Check: "path manager", Severity: Info,
			Summary: fmt.Sprintf("%s announces %d address(es) (signal endpoints) but accepts no announcement from peers (add_addr_accepted 0): fine for a server, a client would ignore its server's extra addresses", where(o), signal),
			Fix:     inNS(o, "ip mptcp limits set subflows 2 add_addr_accepted 2") + " where this host is a client"})
	}
}

func checkDefaults(o Options, r *report) {
	def, _, err := sysctl(o, "net.ipv4.tcp_congestion_control")
	if err != nil {
		r.add(Finding{Check: "defaults", Severity: Warn, Summary: fmt.Sprintf("cannot read the default congestion control of %s: %v", where(o), err)})
		return
	}
	loaded := r.loaded // nil without privileges: checkPrivileges says so
	ours := false
	for _, l := range loaded {
		ours = ours || l.Name == def
	}
	if ours {
		r.add(Finding{Check: "defaults", Severity: Warn,
			Summary: fmt.Sprintf("the default congestion control of %s is %s: every TCP socket there that asks for none gets it, plain TCP included, where it runs as Reno", where(o), def),
			Fix:     "give it to the MPTCP applications only: `mptcp-cc policy attach --cgroup CGROUP --algo " + def + "` or TCP_CONGESTION on their sockets, and set the default back (" + inNS(o, "sysctl -w net.ipv4.tcp_congestion_control=cubic") + ")",
			Doc:     "docs/policy.md"})
	} else {
		r.add(Finding{Check: "defaults", Severity: OK, Summary: fmt.Sprintf("the default congestion control of %s is %s, not one of mptcp-cc's: only the sockets given one get it", where(o), def)})
	}
	if o.Netns == "" {
		return // the host's namespace may make any registered CC its default
	}
	allowed, _, err := sysctl(o, "net.ipv4.tcp_allowed_congestion_control")
	if err != nil {
		return
	}
	var refused []string
	for _, l := range loaded {
		if l.Registered && !slices.Contains(strings.Fields(allowed), l.Name) {
			refused = append(refused, l.Name)
		}
	}
	if len(refused) > 0 {
		r.add(Finding{Check: "defaults", Severity: Warn,
			Summary: fmt.Sprintf("%s cannot make %s its default congestion control: only those in net.ipv4.tcp_allowed_congestion_control (the kernel answers EPERM); sockets and policies can still use them", where(o), strings.Join(refused, ", ")),
			Fix:     "load with `mptcp-cc load --allow`, or add them to net.ipv4.tcp_allowed_congestion_control", Doc: "docs/policy.md"})
	}
}

func checkAlgorithms(o Options, r *report) {
	if r.privErr != nil {
		return // checkPrivileges said so
	}
	loaded, err := r.loaded, r.loadedErr
	if err != nil {
		r.add(Finding{Check: "algorithms", Severity: Warn, Summary: fmt.Sprintf("reading the pins under %s: %v", o.PinRoot, err)})
		return
	}
	if len(loaded) == 0 {
		r.add(Finding{Check: "algorithms", Severity: Info, Summary: "no coupled congestion control loaded under " + o.PinRoot, Fix: "`mptcp-cc load --algo lia` (or the daemon's configuration)"})
		return
	}
	for _, l := range loaded {
		r.add(registration("algorithms", l.Name, l.Algo, l.Registered, l.Build, l.BuildRecorded, "mptcp-cc unload --name "+l.Name, "mptcp-cc upgrade --name "+l.Name))
	}
}

// registration is the finding on one loaded algorithm or scheduler: its
// pins are stale, or another build loaded it (upgrade replaces it), or it
// is this binary's.
func registration(check, name, algo string, registered bool, b structops.Build, recorded bool, unload, upgrade string) Finding {
	switch {
	case !registered:
		return Finding{Check: check, Severity: Warn, Summary: fmt.Sprintf("%s is pinned but the kernel no longer lists it (stale pins)", name), Fix: "`" + unload + "`"}
	case !recorded:
		return Finding{Check: check, Severity: Warn, Summary: fmt.Sprintf("%s (%s) was loaded by mptcp-cc 0.1.0 or earlier, which recorded no build", name, algo), Fix: "`" + upgrade + "`: open connections keep their programs"}
	case !structops.Current(b, recorded):
		return Finding{Check: check, Severity: Warn, Summary: fmt.Sprintf("%s (%s) runs the build of %s, not this binary's (%s)", name, algo, b.Version, structops.ThisBuild().Version), Fix: "`" + upgrade + "`: open connections keep their programs"}
	}
	return Finding{Check: check, Severity: OK, Summary: fmt.Sprintf("%s (%s) loaded and registered, this binary's build", name, algo)}
}

// knownFault is a data-integrity or window fault measured on some kernels
// (docs/kernel-faults.md).
type knownFault struct {
	release  *regexp.Regexp
	summary  string
	checksum bool // DSS checksums avoided it where measured
	doc      string
}

var knownFaults = []knownFault{{
	release:  regexp.MustCompile(`^6\.18\.`),
	summary:  "on Linux 6.18 MPTCP delivered the right number of wrong bytes in about 1 in 10,000 short two-subflow connections (this project's host, 6.18.44; Debian's 6.18.15: 1 in 5,000), whatever the congestion control; with DSS checksums on, in none of 10,000",
	checksum: true,
	doc:      "docs/kernel-faults.md#1-mptcp-connections-that-deliver-the-right-count-of-wrong-bytes",
}, {
	release: regexp.MustCompile(`^6\.18\.44-fc-`),
	summary: "this kernel build (a Firecracker/PVM guest) hands a BPF congestion control an implausible ssthresh a few times per 10,000 loss recoveries; mptcp-cc's window guard repairs it at the next callback",
	doc:     "docs/kernel-faults.md#2-an-ssthresh-nobody-returned-with-bpf-congestion-controls-only",
}}

func checkIntegrity(o Options, r *report) {
	release := kernel.Release()
	csum, ok, _ := sysctl(o, "net.mptcp.checksum_enabled")
	on := ok && csum == "1"
	known := false
	for _, k := range knownFaults {
		if !k.release.MatchString(release) {
			continue
		}
		known = true
		switch {
		case k.checksum && !on:
			r.add(Finding{Check: "integrity", Severity: Warn, Summary: k.summary + "; checksums are off in " + where(o),
				Fix: inNS(o, "sysctl -w net.mptcp.checksum_enabled=1") + " on both ends (the cost: docs/troubleshooting.md), or a kernel without the fault", Doc: k.doc})
		case k.checksum:
			r.add(Finding{Check: "integrity", Severity: OK, Summary: "DSS checksums are on in " + where(o) + ", which avoided the wrong bytes measured on Linux 6.18", Doc: k.doc})
		default:
			r.add(Finding{Check: "integrity", Severity: Info, Summary: k.summary, Doc: k.doc})
		}
	}
	if !known {
		r.add(Finding{Check: "integrity", Severity: OK, Summary: "no MPTCP fault is known to this project for Linux " + release, Doc: "docs/kernel-faults.md"})
	}
}

func checkSchedulers(o Options, r *report) {
	if r.features.SchedStructOps {
		r.add(Finding{Check: "schedulers", Severity: OK, Summary: "the kernel has the BPF MPTCP scheduler hook: `mptcp-cc sched load` works (experimental)"})
		if r.privErr != nil {
			return // checkPrivileges said so
		}
		loaded, err := sched.List(o.SchedPinRoot)
		if err != nil {
			r.add(Finding{Check: "schedulers", Severity: Warn, Summary: fmt.Sprintf("reading the pins under %s: %v", o.SchedPinRoot, err)})
		}
		for _, l := range loaded {
			r.add(registration("schedulers", l.Name, l.Algorithm, l.Registered, l.Build, l.BuildRecorded, "mptcp-cc sched unload "+l.Name, "mptcp-cc sched upgrade "+l.Name))
		}
		return
	}
	r.add(Finding{Check: "schedulers", Severity: Info, Summary: "no BPF MPTCP scheduler hook (no released kernel has it; mptcp_net-next's export branch does): connections use the kernel's own scheduler, and mptcp-cc's packet schedulers cannot load here",
		Doc: "docs/schedulers.md"})
}
