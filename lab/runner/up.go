// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/lab/mptcpd"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
)

// Up builds the network of one case (the first unless caseID names one),
// loads its congestion controls, starts an xfer sink on port 5000 of every
// server, calls ready with what it built, and keeps it all until ctx ends.
func Up(ctx context.Context, f *scenario.File, caseID string, id RunID, ready func(*UpInfo)) error {
	var c *scenario.Case
	for i := range f.Cases {
		if caseID == "" || f.Cases[i].ID == caseID || f.Cases[i].Variant == caseID {
			c = &f.Cases[i]
			break
		}
	}
	if c == nil {
		return fmt.Errorf("no case %q in %s (cases: %s)", caseID, f.Path, strings.Join(caseIDs(f), ", "))
	}
	if err := checkKernelCCs(f); err != nil {
		return err
	}
	ccs, err := LoadCCs(id, (&scenario.File{Cases: []scenario.Case{*c}}).Algorithms())
	if err != nil {
		return err
	}
	defer ccs.Unload()
	cfg, err := TopoConfig(c.Scenario, 0, id.NSPrefix())
	if err != nil {
		return err
	}
	n, err := topo.BuildMulti(cfg)
	if err != nil {
		return err
	}
	defer n.Close()
	pm := &pathManagers{}
	defer pm.stop()
	var pmCmds []string
	for h, host := range c.Scenario.Hosts {
		if !usesMptcpd(host) {
			continue
		}
		logs, err := os.MkdirTemp("", "mptcp-lab-mptcpd-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(logs)
		if host.JoinAfter > 0 {
			for _, ns := range n.Hosts[h] {
				cmd, err := mptcpd.Command(mptcpdOptions(host, ns, logs))
				if err != nil {
					return err
				}
				pmCmds = append(pmCmds, fmt.Sprintf("join, %v after the flows start: %s", host.JoinAfter, cmd))
			}
			continue
		}
		cmds, err := pm.start(c.Scenario, n, h, logs)
		if err != nil {
			return err
		}
		for _, cmd := range cmds {
			pmCmds = append(pmCmds, "running (path manager of "+host.Name+"): "+cmd)
		}
	}
	info := &UpInfo{Case: c.ID, Scenario: c.Scenario, Net: n, CCs: ccs.Loaded()}
	for m, ns := range n.Servers {
		s, err := xfer.Listen(ns, netip.AddrPortFrom(n.ServerAddr(m), 5000), true)
		if err != nil {
			return err
		}
		defer closeSoon(s)
		info.Sinks = append(info.Sinks, s.Addr())
	}
	for _, fi := range instances(c.Scenario, n, ccs) {
		if fi.spec.Tool == "xfer" {
			fi.remote = netip.AddrPortFrom(fi.remote.Addr(), 5000)
			info.Commands = append(info.Commands, fi.xferCommand())
		} else {
			info.Commands = append(info.Commands, "server: "+strings.Join(fi.iperfServerArgv(), " "),
				"client: "+strings.Join(fi.iperfClientArgv(c.Scenario.Record.Sample, c.Scenario.Record.Warmup), " "))
		}
	}
	info.Commands = append(info.Commands, pmCmds...)
	for h, host := range c.Scenario.Hosts {
		if host.JoinAfter > 0 && !usesMptcpd(host) {
			for _, cmd := range n.EndpointCommands(h) {
				info.Commands = append(info.Commands, fmt.Sprintf("join, %v after the flows start: %s", host.JoinAfter, cmd))
			}
		}
	}
	ready(info)
	<-ctx.Done()
	return nil
}

// UpInfo describes a network that Up keeps.
type UpInfo struct {
	Case     string
	Scenario *scenario.Scenario
	Net      *topo.Multi
	CCs      []*LoadedCC
	Sinks    []netip.AddrPort
	Commands []string // client commands equivalent to the scenario's flows
}
