// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
	"github.com/mptcp-cc/mptcp-cc/lab/report"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
)

// Seed of link j (server links after the access links) in repetition rep:
// different per repetition, the same for every variant of one repetition.
func linkSeed(base uint64, rep, j int) uint64 {
	return base*1_000_003 + uint64(rep)*7919 + uint64(j)*104729 + 1
}

// TopoConfig translates a scenario into the topology of one repetition.
func TopoConfig(sc *scenario.Scenario, rep int, prefix string) (topo.MultiConfig, error) {
	cfg := topo.MultiConfig{Prefix: prefix, NoOffload: sc.NoOffload, Sysctls: append([]string{"net.ipv4.tcp_no_metrics_save=1", "net.ipv4.tcp_notsent_lowat=131072"}, sc.Sysctls...)}
	maxAccess, maxServer := time.Duration(0), time.Duration(0)
	for _, l := range sc.Links {
		maxAccess = max(maxAccess, l.Delay)
	}
	for _, s := range sc.Servers {
		maxServer = max(maxServer, s.Link.Delay)
	}
	shaping := func(l scenario.Link, seed uint64, rtt time.Duration) (topo.Shaping, error) {
		sh := topo.Shaping{RateBits: l.Rate, Delay: l.Delay, Loss: l.Loss, Jitter: l.Jitter, Seed: seed, AQM: l.AQM}
		switch {
		case l.Queue.Bytes > 0:
			sh.QueueBytes = uint32(min(l.Queue.Bytes, 1<<30))
		case l.Queue.Packets > 0:
			sh.QueueBytes = uint32(min(l.Queue.Packets*1500, 1<<30))
		case l.Queue.BDP > 0:
			sh.QueueBytes = uint32(max(l.Queue.BDP*float64(l.Rate)/8*rtt.Seconds(), 3000))
		}
		if l.Trace != "" {
			t, err := linkem.LoadTrace(l.Trace)
			if err != nil {
				return sh, err
			}
			sh.Trace = t
		}
		return sh, nil
	}
	// A chained path's base RTT is twice both its links' delays (lab/topo):
	// the largest through either of its links sizes their BDP queues.
	rtt := make([]time.Duration, len(sc.Links))
	for j, l := range sc.Links {
		rtt[j] = 2 * (l.Delay + maxServer)
	}
	for _, h := range sc.Hosts {
		for _, p := range h.Paths {
			if p.ThenIndex >= 0 {
				r := 2 * (sc.Links[p.LinkIndex].Delay + sc.Links[p.ThenIndex].Delay + maxServer)
				rtt[p.LinkIndex], rtt[p.ThenIndex] = max(rtt[p.LinkIndex], r), max(rtt[p.ThenIndex], r)
			}
		}
	}
	for j, l := range sc.Links {
		sh, err := shaping(l, linkSeed(sc.Seed, rep, j), rtt[j])
		if err != nil {
			return cfg, err
		}
		cfg.Links = append(cfg.Links, topo.LinkConfig{Name: l.Name, Shaping: sh})
	}
	for m, s := range sc.Servers {
		sh, err := shaping(s.Link, linkSeed(sc.Seed, rep, len(sc.Links)+m), 2*(s.Link.Delay+maxAccess))
		if err != nil {
			return cfg, err
		}
		cfg.Servers = append(cfg.Servers, topo.ServerConfig{Name: s.Name, Link: sh, MaxSubflows: s.MaxSubflows})
	}
	for _, h := range sc.Hosts {
		hc := topo.HostConfig{Name: h.Name, Count: h.Count, Endpoints: h.Endpoints, LateEndpoints: h.JoinAfter > 0,
			MaxSubflows: h.MaxSubflows, AddAddrAccepted: h.AddAddrAccepted}
		if usesMptcpd(h) {
			// The endpoints are mptcpd's to add (pathManagers).
			hc.Endpoints, hc.LateEndpoints = "none", false
		}
		for _, p := range h.Paths {
			hc.Paths = append(hc.Paths, p.LinkIndex)
			hc.Backup = append(hc.Backup, p.Backup)
			hc.Then = append(hc.Then, p.ThenIndex)
		}
		cfg.Hosts = append(cfg.Hosts, hc)
	}
	return cfg, nil
}

// instances expands the flows of a scenario on a built network.
func instances(sc *scenario.Scenario, n *topo.Multi, ccs *CCSet) []*flowInst {
	var out []*flowInst
	port := 5201
	for fidx := range sc.Flows {
		f := &sc.Flows[fidx]
		h := sc.Hosts[f.Host]
		total := h.Count * f.Count
		for inst := range h.Count {
			paths := map[netip.Addr]string{}
			for i, p := range h.Paths {
				paths[n.HostAddr(f.Host, inst, i)] = p.Name()
			}
			for c := range f.Count {
				idx := inst*f.Count + c
				name := f.Name
				if total > 1 {
					name = f.Name + "/" + strconv.Itoa(idx)
				}
				fi := &flowInst{spec: f, index: idx, name: name, ns: n.Hosts[f.Host][inst], local: n.HostAddr(f.Host, inst, f.Path),
					hostPath: paths, remote: netip.AddrPortFrom(n.ServerAddr(f.Server), 0), srvNS: n.Servers[f.Server],
					subs: map[string]int{}, retrans: map[string]uint64{}, retransB: map[string]uint64{}}
				if ccs != nil {
					fi.ccKernel = ccs.KernelName(f.CC)
				} else if !f.CC.Ours() {
					fi.ccKernel = f.CC.Name
				}
				if f.Tool == "iperf3" {
					fi.port, fi.cport = port, 40000+len(out)
					fi.remote = netip.AddrPortFrom(fi.remote.Addr(), uint16(port))
					port++
				}
				fi.res = report.FlowResult{Flow: f.Name, Instance: idx, Name: name, Host: fi.ns, Tool: f.Tool, Protocol: f.Protocol(),
					CC: f.CC.String(), CCKernel: fi.ccKernel, RequestBytes: f.Bytes, RequestS: f.Duration.Seconds()}
				out = append(out, fi)
			}
		}
	}
	return out
}
