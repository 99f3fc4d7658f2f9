// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

const policyHelp = `DIR is a cgroup v2 directory, absolute or relative to the cgroup v2 mount.
NAME is an algorithm of this project (olia: the kernel's mptcp_olia, loaded
with ` + "`mptcp-cc load --algo olia`" + `) or any registered congestion control.
The most specific rule wins; the nearest cgroup's policy wins; subflows that
join a connection take the CC it already runs.`

// policyRootFlag is where policies are pinned.
func policyRootFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("MPTCP_CC_POLICY_BPFFS")
	if def == "" {
		def = policy.DefaultPinRoot
	}
	return fs.String("bpffs", def, "bpffs `DIR` for the policy pins (env MPTCP_CC_POLICY_BPFFS)")
}

// ccName turns --algo into a kernel congestion control name: an algorithm
// of this project becomes its default registered name, anything else is
// taken as a kernel name.
func ccName(algo string) string {
	if a, err := cc.Lookup(algo); err == nil {
		return a.DefaultName()
	}
	return algo
}

func parsePrefix(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, nil
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return p, nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("bad --dst %q: want an IPv4 or IPv6 prefix such as 10.0.0.0/8 or 2001:db8::/32, or an address", s)
}

func cmdPolicyAttach(fs *flag.FlagSet) cli.Action {
	cgroup := fs.String("cgroup", "", "cgroup v2 `DIR` (absolute, or relative to the cgroup v2 mount)")
	algo := fs.String("algo", "", "algorithm `NAME` ("+joinNames()+") or registered congestion control")
	dst := fs.String("dst", "", "only peers in this `PREFIX` (IPv4 or IPv6)")
	dport := fs.Uint("dport", 0, "only this service `PORT` (remote when connecting, local when accepting)")
	tcp := fs.Bool("tcp", false, "plain TCP sockets too, not only MPTCP subflows")
	delack := fs.Duration("delack-max", 0, "cap the matched sockets' delayed-ACK timer (e.g. 8ms; the kernel takes 2 ticks to 200ms): on a receiver, what bounds how long a subflow's ACK is held (docs/kernel-faults.md section 3)")
	root := policyRootFlag(fs)
	return func(_ []string, out io.Writer) error {
		if *cgroup == "" {
			return cli.Usagef("--cgroup is required")
		}
		if *delack < 0 {
			return fmt.Errorf("bad --delack-max %v: a duration such as 8ms, or 0 for the kernel's timer", *delack)
		}
		if *algo == "" {
			return cli.Usagef("--algo is required: one of %s, or a registered congestion control", joinNames())
		}
		prefix, err := parsePrefix(*dst)
		if err != nil {
			return err
		}
		if *dport > 65535 {
			return fmt.Errorf("bad --dport %d: a port is 1 to 65535", *dport)
		}
		if err := checkPinRoot(*root, true); err != nil {
			return err
		}
		r := policy.Rule{Cgroup: *cgroup, CC: ccName(*algo), Dst: prefix, DstPort: uint16(*dport), PlainTCP: *tcp, DelackMax: *delack}
		info, err := policy.AttachRule(r, *root)
		if err != nil {
			return err
		}
		what := "MPTCP subflows"
		if info.PlainTCP {
			what = "MPTCP subflows and plain TCP sockets"
		}
		if info.Dst.IsValid() {
			what += " with peers in " + info.Dst.String()
		}
		if info.DstPort != 0 {
			what += " on port " + strconv.Itoa(int(info.DstPort))
		}
		fmt.Fprintf(out, "rule %d in %s: new %s run %s", info.ID, *cgroup, what, info.CC)
		if info.DelackMax != 0 {
			fmt.Fprintf(out, ", their delayed ACKs held %v at most", info.DelackMax)
		}
		fmt.Fprintln(out)
		return nil
	}
}

func cmdPolicyDetach(fs *flag.FlagSet) cli.Action {
	cgroup := fs.String("cgroup", "", "cgroup v2 `DIR`")
	algo := fs.String("algo", "", "remove only the rules naming this algorithm or congestion control `NAME` (not with --rule)")
	rule := fs.Uint("rule", 0, "remove only this rule `ID` (`mptcp-cc policy list` shows them; not with --algo)")
	root := policyRootFlag(fs)
	return func(_ []string, out io.Writer) error {
		if *cgroup == "" {
			return cli.Usagef("--cgroup is required")
		}
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		switch {
		case *algo != "" && *rule != 0:
			return cli.Usagef("give --algo or --rule, not both")
		case *algo != "":
			n, err := policy.DetachCC(*cgroup, ccName(*algo), *root)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "removed %d rule(s) naming %s from %s\n", n, ccName(*algo), *cgroup)
		case *rule != 0:
			if err := policy.DetachRule(*cgroup, uint32(*rule), *root); err != nil {
				return err
			}
			fmt.Fprintf(out, "removed rule %d from %s\n", *rule, *cgroup)
		default:
			if err := policy.Detach(*cgroup, *root); err != nil {
				return err
			}
			fmt.Fprintf(out, "policy of %s detached; its sockets keep the CC they were given\n", *cgroup)
		}
		return nil
	}
}

func cmdPolicyList(fs *flag.FlagSet) cli.Action {
	asJSON := fs.Bool("json", false, "JSON output")
	root := policyRootFlag(fs)
	return func(_ []string, out io.Writer) error {
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		list, err := policy.List(*root)
		if err != nil {
			return needsRoot(err, *root)
		}
		if *asJSON {
			if list == nil {
				list = []policy.Attachment{}
			}
			return cli.WriteJSON(out, list)
		}
		if len(list) == 0 {
			fmt.Fprintln(out, "no policy attached; try `mptcp-cc policy attach --cgroup DIR --algo olia`")
			return nil
		}
		for i, a := range list {
			if i > 0 {
				fmt.Fprintln(out)
			}
			state := "attached"
			if !a.Attached {
				state = "CGROUP REMOVED, stale pins: `mptcp-cc policy detach --cgroup " + a.Cgroup + "`"
			}
			c := a.Counters
			fmt.Fprintf(out, "%s (cgroup id %d): %s\n", a.Cgroup, a.CgroupID, state)
			fmt.Fprintf(out, "  seen %d MPTCP subflows, %d plain TCP sockets: %d matched a rule, %d joins followed their connection, %d CC changes, %d delayed-ACK caps, %d errors",
				c.MPTCP, c.TCP, c.Matched, c.Followed, c.Changed, c.Delack, c.Errors)
			if c.Errors > 0 {
				fmt.Fprintf(out, " (last: errno %d)", -c.LastError)
			}
			fmt.Fprintln(out)
			t := cli.NewTable(out, "  RULE", "CC", "DST", "DPORT", "PLAIN TCP", "DELACK MAX", "APPLIED", "")
			for _, r := range a.Rules {
				dst, port, delack, note := "any", "any", "kernel's", ""
				if r.DelackMax != 0 {
					delack = r.DelackMax.String()
				}
				if r.Dst.IsValid() {
					dst = r.Dst.String()
				}
				if r.DstPort != 0 {
					port = strconv.Itoa(int(r.DstPort))
				}
				if !r.Registered {
					note = "CC NOT REGISTERED: sockets keep their CC"
				}
				t.Row(fmt.Sprintf("  %d", r.ID), r.CC, dst, port, r.PlainTCP, delack, r.Applied, note)
			}
			if err := t.Flush(); err != nil {
				return err
			}
		}
		return nil
	}
}
