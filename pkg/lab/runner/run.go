// Package runner runs experiments on emulated multipath networks with real
// kernel MPTCP (it needs root): for a scenario file (pkg/lab/scenario) Run
// builds the network (pkg/topo), loads the congestion controls the flows
// need (pkg/cc), runs the flows with the project's own transfer tool
// (pkg/xfer) or iperf3, samples every subflow (tcp_info through sock_diag,
// and mptcp-cc's map through pkg/stats), tears everything down, and writes
// the results (pkg/lab/report).
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/lab/report"
	"github.com/mptcp-cc/mptcp-cc/pkg/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/pkg/linkem"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/xfer"
)

// Options say how to run a scenario file.
type Options struct {
	Out     string   // results go to Out/<scenario name>
	Reps    int      // > 0 overrides the file's repetitions
	Cases   []string // run only these cases (case ids or variant names); empty: all
	ID      RunID    // names everything the run creates (NewRunID)
	Log     io.Writer
	Command string // the command line that started the run, for the record
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

func (o Options) selected(c scenario.Case) bool {
	if len(o.Cases) == 0 {
		return true
	}
	for _, s := range o.Cases {
		if s == c.ID || s == c.Variant {
			return true
		}
	}
	return false
}

// Run runs every selected case of the file, each for the given number of
// repetitions, on a freshly built network per repetition. It always tears
// down what it built and unloads what it loaded, also when ctx is
// cancelled; results of the repetitions that ran are written either way.
func Run(ctx context.Context, f *scenario.File, o Options) (sum *report.Summary, err error) {
	if o.ID == "" {
		return nil, errors.New("runner.Run needs a run id (runner.NewRunID)")
	}
	var cases []scenario.Case
	for _, c := range f.Cases {
		if o.selected(c) {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no case of %s matches %v (cases: %s)", f.Path, o.Cases, strings.Join(caseIDs(f), ", "))
	}
	if err := checkKernelCCs(f); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("iperf3"); err != nil && usesIperf(cases) {
		return nil, errors.New("a flow uses iperf3, which is not installed (make deps)")
	}
	ccs, err := LoadCCs(o.ID, f.Algorithms())
	if err != nil {
		return nil, err
	}
	defer func() {
		if uerr := ccs.Unload(); uerr != nil {
			err = errors.Join(err, fmt.Errorf("unloading: %w", uerr))
		}
	}()
	for _, l := range ccs.Loaded() {
		o.logf("loaded %s as %s", l.Spec, l.Name)
	}

	dir := filepath.Join(o.Out, f.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), f.Source, 0o644); err != nil {
		return nil, err
	}
	loaded, _ := json.Marshal(ccs.Loaded())
	sum = &report.Summary{Scenario: f.Name, File: f.Path, Run: string(o.ID), Command: o.Command, Started: time.Now(),
		Kernel: kernelRelease(), Commit: gitCommit(), SweepName: f.SweepName, SweepValues: f.SweepVals,
		CCs: loaded, Reference: f.References}
	variantSeen := map[string]bool{}
	for _, c := range cases {
		if !variantSeen[c.Variant] {
			variantSeen[c.Variant] = true
			sum.Variants = append(sum.Variants, c.Variant)
		}
	}
	var failures []string
	for ci, c := range cases {
		reps := c.Scenario.Repetitions
		if o.Reps > 0 {
			reps = o.Reps
		}
		sum.Repetitions = reps
		var results []*report.RepResult
		for rep := 0; rep < reps && ctx.Err() == nil; rep++ {
			rdir := filepath.Join(dir, c.ID, "rep"+strconv.Itoa(rep))
			r := runRep(ctx, c, rep, ccs, o, rdir)
			if err := report.WriteRep(r, c.Scenario.Record, c.Scenario.Record.Sample); err != nil {
				r.Error = strings.TrimSpace(r.Error + "; writing results: " + err.Error())
			}
			r.Dir, _ = filepath.Rel(dir, rdir)
			results = append(results, r)
			o.logf("[%d/%d %s rep %d/%d] %s", ci+1, len(cases), c.ID, rep+1, reps, report.Brief(r))
			if r.Error != "" {
				sum.Failed++
				failures = append(failures, fmt.Sprintf("%s rep %d: %s", c.ID, rep, r.Error))
			}
		}
		if len(results) > 0 {
			sum.Cases = append(sum.Cases, report.SummarizeCase(c, results))
		}
		if ctx.Err() != nil {
			break
		}
	}
	sum.Seconds = time.Since(sum.Started).Seconds()
	if len(o.Cases) > 0 {
		report.MergeSummary(filepath.Join(dir, "summary.json"), f, sum)
	}
	if werr := report.WriteSummary(dir, sum); werr != nil {
		err = errors.Join(err, werr)
	}
	if ctx.Err() != nil {
		return sum, errors.Join(err, fmt.Errorf("interrupted: %w", ctx.Err()))
	}
	if len(failures) > 0 {
		return sum, errors.Join(err, fmt.Errorf("%d repetition(s) failed:\n  %s", len(failures), strings.Join(failures, "\n  ")))
	}
	return sum, err
}

func caseIDs(f *scenario.File) []string {
	var out []string
	for _, c := range f.Cases {
		out = append(out, c.ID)
	}
	return out
}

func usesIperf(cases []scenario.Case) bool {
	for _, c := range cases {
		for _, f := range c.Scenario.Flows {
			if f.Tool == "iperf3" {
				return true
			}
		}
	}
	return false
}

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
		sh := topo.Shaping{RateBits: l.Rate, Delay: l.Delay, Loss: l.Loss, Jitter: l.Jitter, Seed: seed}
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
	for j, l := range sc.Links {
		sh, err := shaping(l, linkSeed(sc.Seed, rep, j), 2*(l.Delay+maxServer))
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
		for _, p := range h.Paths {
			hc.Paths = append(hc.Paths, p.LinkIndex)
			hc.Backup = append(hc.Backup, p.Backup)
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
				paths[n.HostAddr(f.Host, inst, i)] = p.Link
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
	insts := instances(sc, n, ccs)

	// Receivers: one xfer sink per server, one iperf3 server per iperf3 flow.
	sinks := map[int]*xfer.Server{}
	defer func() {
		for _, s := range sinks {
			closeSoon(s)
		}
	}()
	iperfPorts := map[string][]int{}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}()
	for _, fi := range insts {
		switch fi.spec.Tool {
		case "xfer":
			if sinks[fi.spec.Server] == nil {
				s, err := xfer.Listen(fi.srvNS, netip.AddrPortFrom(fi.remote.Addr(), 0), true)
				if err != nil {
					r.Error = err.Error()
					return r
				}
				sinks[fi.spec.Server] = s
			}
			fi.remote = sinks[fi.spec.Server].Addr()
		case "iperf3":
			argv := fi.iperfServerArgv()
			p, _, _, err := startProc(argv)
			if err != nil {
				r.Error = err.Error()
				return r
			}
			procs = append(procs, p)
			r.Commands = append(r.Commands, "server: "+strings.Join(argv, " "))
			iperfPorts[fi.srvNS] = append(iperfPorts[fi.srvNS], fi.port)
		}
	}
	for ns, ports := range iperfPorts {
		if err := waitListening(ns, ports, 5*time.Second); err != nil {
			r.Error = err.Error()
			return r
		}
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
				err := n.AddEndpoints(h)
				joined <- joinResult{host: host.Name, at: host.JoinAfter, cmds: n.EndpointCommands(h), err: err}
			}()
		}
	}
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
	smp.stop()
	if r.Error != "" {
		// Reset the sockets still open so blocked transfers end now.
		for _, ns := range n.Namespaces() {
			_ = netns.Exec(ns, "ss", "-K", "-t")
		}
	}

	for j, l := range sc.Links {
		lc, err := n.AccessLinkStats(j)
		if err == nil {
			r.Links = append(r.Links, report.LinkResult{Link: l.Name, Kind: "access", Emulated: l.Emulated(), SentBytes: lc.SentBytes,
				SentPackets: lc.SentPackets, Dropped: lc.Dropped, DroppedLoss: lc.DroppedLoss})
		}
	}
	for m, s := range sc.Servers {
		lc, err := n.ServerLinkStats(m)
		if err == nil && (s.Link.Rate > 0 || s.Link.Emulated()) {
			r.Links = append(r.Links, report.LinkResult{Link: s.Name, Kind: "server", Emulated: s.Link.Emulated(), SentBytes: lc.SentBytes,
				SentPackets: lc.SentPackets, Dropped: lc.Dropped, DroppedLoss: lc.DroppedLoss})
		}
	}
	r.Samples = smp.samples
	r.Goodput = smp.goodput
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
	for e, cnt := range smp.errs {
		o.logf("sampling: %s (%d times)", e, cnt)
	}
	return r
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

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "-dirty"
	}
	return c
}

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
	for h, host := range c.Scenario.Hosts {
		if host.JoinAfter > 0 {
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
