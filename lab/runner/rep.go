// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/report"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// runRep runs one repetition of a case on a network of its own, which it
// removes again. Whatever fails is in the result's Error.
func runRep(ctx context.Context, c scenario.Case, rep int, ccs *CCSet, o Options, dir string) *report.RepResult {
	sc := c.Scenario
	r := &report.RepResult{Case: c.ID, Variant: c.Variant, Sweep: c.Sweep, Rep: rep, Started: time.Now(), Dir: dir}
	defer func() { r.Seconds = time.Since(r.Started).Seconds() }()
	cfg, err := TopoConfig(sc, rep, o.ID.NSPrefix())
	if err != nil {
		r.Error = err.Error()
		return r
	}
	n, err := topo.BuildMulti(cfg)
	if err != nil {
		r.Error = "building the network: " + err.Error()
		return r
	}
	defer func() {
		if err := n.Close(); err != nil {
			r.Error = strings.TrimSpace(r.Error + "; removing the network: " + err.Error())
		}
	}()
	r.Network = n.Namespaces()
	pm := &pathManagers{}
	defer func() {
		cmds, err := pm.stop()
		r.Commands = append(r.Commands, cmds...)
		if err != nil {
			r.Error = strings.TrimSpace(r.Error + "; stopping mptcpd: " + err.Error())
		}
	}()
	for h, host := range sc.Hosts {
		if usesMptcpd(host) && host.JoinAfter == 0 {
			cmds, err := pm.start(sc, n, h, dir)
			for _, c := range cmds {
				r.Commands = append(r.Commands, fmt.Sprintf("path manager of %s (before the flows): %s", host.Name, c))
			}
			if err != nil {
				r.Error = "starting mptcpd: " + err.Error()
				return r
			}
		}
	}
	insts := instances(sc, n, ccs)
	rv := &receivers{sinks: map[int]*xfer.Server{}}
	defer rv.close()
	if err := rv.start(insts, r); err != nil {
		r.Error = err.Error()
		return r
	}
	for _, fi := range insts {
		if fi.spec.Tool == "iperf3" {
			fi.res.Command = strings.Join(fi.iperfClientArgv(sc.Record.Sample, sc.Record.Warmup), " ")
		} else {
			fi.res.Command = fi.xferCommand()
		}
		fi.res.Remote = fi.remote.String()
		r.Commands = append(r.Commands, fmt.Sprintf("%s (start %v): %s", fi.name, fi.spec.Start, fi.res.Command))
	}

	t0 := time.Now()
	smp, err := newSampler(t0, sc.Record, ccs, insts)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	smp.start()
	runFlows(ctx, sc, n, pm, insts, rv.sinks, t0, r)
	smp.stop()
	if r.Error != "" {
		// Reset the sockets still open so blocked transfers end now.
		for _, ns := range n.Namespaces() {
			_ = netns.Exec(ns, "ss", "-K", "-t")
		}
	}
	r.Links = linkResults(sc, n)
	r.Samples = smp.samples
	r.Goodput = smp.goodput
	collectFlows(sc, insts, r)
	for e, cnt := range smp.errs {
		o.logf("sampling: %s (%d times)", e, cnt)
	}
	return r
}

// receivers are the receiving ends of a repetition: one xfer sink per
// server, one iperf3 server per iperf3 flow.
type receivers struct {
	sinks map[int]*xfer.Server // by server index
	procs []*exec.Cmd
}

// start starts the receivers of every flow instance and waits until the
// iperf3 servers listen; it points the instances at them.
func (rv *receivers) start(insts []*flowInst, r *report.RepResult) error {
	iperfPorts := map[string][]int{}
	for _, fi := range insts {
		switch fi.spec.Tool {
		case "xfer":
			if rv.sinks[fi.spec.Server] == nil {
				s, err := xfer.Listen(fi.srvNS, netip.AddrPortFrom(fi.remote.Addr(), 0), true)
				if err != nil {
					return err
				}
				rv.sinks[fi.spec.Server] = s
			}
			fi.remote = rv.sinks[fi.spec.Server].Addr()
		case "iperf3":
			argv := fi.iperfServerArgv()
			p, _, _, err := startProc(argv)
			if err != nil {
				return err
			}
			rv.procs = append(rv.procs, p)
			r.Commands = append(r.Commands, "server: "+strings.Join(argv, " "))
			iperfPorts[fi.srvNS] = append(iperfPorts[fi.srvNS], fi.port)
		}
	}
	for ns, ports := range iperfPorts {
		if err := waitListening(ns, ports, 5*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// close stops the iperf3 servers, then the sinks.
func (rv *receivers) close() {
	for _, p := range rv.procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
	for _, s := range rv.sinks {
		closeSoon(s)
	}
}

// runFlows runs every flow instance from t0 and adds the late endpoints of
// the hosts that join late, until all are done, ctx ends or the scenario's
// timeout passes (which sets r.Error).
func runFlows(ctx context.Context, sc *scenario.Scenario, n *topo.Multi, pm *pathManagers, insts []*flowInst, sinks map[int]*xfer.Server, t0 time.Time, r *report.RepResult) {
	done := make(chan struct{}, len(insts))
	for _, fi := range insts {
		go func() {
			defer func() { done <- struct{}{} }()
			if fi.spec.Tool == "iperf3" {
				fi.runIperf(ctx, t0, sc.Record.Sample, sc.Record.Warmup)
			} else {
				fi.runXfer(ctx, t0, sinks[fi.spec.Server], sc.Record.Warmup)
			}
		}()
	}
	joined := make(chan joinResult, len(sc.Hosts))
	joins := startJoins(ctx, sc, n, pm, r.Dir, t0, joined)
	timeout := time.After(sc.Timeout)
	for left := len(insts) + joins; left > 0; {
		select {
		case j := <-joined:
			left--
			for _, c := range j.cmds {
				r.Commands = append(r.Commands, fmt.Sprintf("join %s (at %v): %s", j.host, j.at, c))
			}
			if j.err != nil && ctx.Err() == nil {
				r.Error = fmt.Sprintf("adding the endpoints of %s at %v: %v", j.host, j.at, j.err)
			}
		case <-done:
			left--
		case <-ctx.Done():
			r.Error = "interrupted"
			left = 0
		case <-timeout:
			r.Error = fmt.Sprintf("timed out after %v", sc.Timeout)
			left = 0
		}
	}
}

// startJoins adds, for every host with join_after, its endpoints that long
// after t0 (or starts its mptcpd, which adds them), reporting on joined.
// It returns how many it started.
func startJoins(ctx context.Context, sc *scenario.Scenario, n *topo.Multi, pm *pathManagers, dir string, t0 time.Time, joined chan<- joinResult) int {
	joins := 0
	for h, host := range sc.Hosts {
		if host.JoinAfter > 0 {
			joins++
			go func() {
				select {
				case <-time.After(time.Until(t0.Add(host.JoinAfter))):
				case <-ctx.Done():
					joined <- joinResult{err: ctx.Err()}
					return
				}
				if usesMptcpd(host) {
					cmds, err := pm.start(sc, n, h, dir)
					joined <- joinResult{host: host.Name, at: host.JoinAfter, cmds: cmds, err: err}
					return
				}
				err := n.AddEndpoints(h)
				joined <- joinResult{host: host.Name, at: host.JoinAfter, cmds: n.EndpointCommands(h), err: err}
			}()
		}
	}
	return joins
}

// linkResults reads the counters of the access links and of the shaped
// server links.
func linkResults(sc *scenario.Scenario, n *topo.Multi) []report.LinkResult {
	var out []report.LinkResult
	for j, l := range sc.Links {
		lc, err := n.AccessLinkStats(j)
		if err == nil {
			out = append(out, report.LinkResult{Link: l.Name, Kind: "access", Emulated: l.Emulated(), SentBytes: lc.SentBytes,
				SentPackets: lc.SentPackets, Dropped: lc.Dropped, DroppedLoss: lc.DroppedLoss})
		}
	}
	for m, s := range sc.Servers {
		lc, err := n.ServerLinkStats(m)
		if err == nil && (s.Link.Rate > 0 || s.Link.Emulated()) {
			out = append(out, report.LinkResult{Link: s.Name, Kind: "server", Emulated: s.Link.Emulated(), SentBytes: lc.SentBytes,
				SentPackets: lc.SentPackets, Dropped: lc.Dropped, DroppedLoss: lc.DroppedLoss})
		}
	}
	return out
}

// collectFlows adds every flow instance's result to r, with its subflow,
// retransmission and anomaly counts from the samples.
func collectFlows(sc *scenario.Scenario, insts []*flowInst, r *report.RepResult) {
	anomalies := report.FindAnomalies(r.Samples)
	for _, fi := range insts {
		fi.mu.Lock()
		res := fi.res
		res.Subflows = len(fi.subs)
		var rt, rb uint64
		for _, v := range fi.retrans {
			rt += v
		}
		for _, v := range fi.retransB {
			rb += v
		}
		if len(fi.retrans) > 0 || res.Retrans == 0 {
			res.Retrans = rt
		}
		if !sc.Record.Kernel {
			res.Retrans = rb
		}
		res.RetransBPF = rb
		res.Anomaly = anomalies[fi.name]
		if !fi.started && res.Error == "" {
			res.Error = "not started"
		} else if !fi.finished && res.Error == "" {
			res.Error = "did not finish"
		}
		r.Goodput = append(r.Goodput, fi.iperfGood...)
		fi.mu.Unlock()
		r.Flows = append(r.Flows, res)
	}
}

// joinResult is what adding one host's late endpoints did.
type joinResult struct {
	host string
	at   time.Duration
	cmds []string
	err  error
}

// closeSoon closes an xfer sink without waiting forever for connections
// that an interrupted run left open.
func closeSoon(s *xfer.Server) {
	done := make(chan struct{})
	go func() {
		_ = s.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}
