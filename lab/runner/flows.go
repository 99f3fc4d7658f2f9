// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/lab/report"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// flowInst is one transfer of a repetition.
type flowInst struct {
	spec     *scenario.Flow
	index    int
	name     string
	ns       string     // client namespace
	local    netip.Addr // source address (the flow's path)
	hostPath map[netip.Addr]string
	remote   netip.AddrPort // server address (port set when the server runs)
	ccKernel string
	srvNS    string

	// iperf3
	port, cport int

	mu        sync.Mutex
	started   bool
	finished  bool
	startedAt time.Time
	initial   netip.AddrPort // the initial subflow's local address
	recv      *xfer.Received
	token     uint32
	subs      map[string]int    // subflow key -> index
	retrans   map[string]uint64 // per subflow: last tcp_info total_retrans
	retransB  map[string]uint64 // per subflow: last map retrans
	iperfGood []report.GoodputSample

	res report.FlowResult
}

func (fi *flowInst) snapshot() (initial netip.AddrPort, recv *xfer.Received, active bool) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return fi.initial, fi.recv, fi.started && !fi.finished
}

func (fi *flowInst) subIndex(key string) int {
	if i, ok := fi.subs[key]; ok {
		return i
	}
	i := len(fi.subs)
	fi.subs[key] = i
	return i
}

func (fi *flowInst) waitStart(ctx context.Context, t0 time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t0.Add(fi.spec.Start))):
		return true
	}
}

func (fi *flowInst) fail(err error) {
	fi.mu.Lock()
	fi.res.Error = err.Error()
	fi.finished = true
	fi.mu.Unlock()
}

// xferCommand is the mptcp-xfer command line equivalent to an in-process
// transfer.
func (fi *flowInst) xferCommand() string {
	argv := []string{"ip", "netns", "exec", fi.ns, "mptcp-xfer", "client", "--connect", fi.remote.String(), "--bind", fi.local.String()}
	if fi.spec.MPTCP {
		argv = append(argv, "--mptcp")
	}
	if fi.ccKernel != "" {
		argv = append(argv, "--cc", fi.ccKernel)
	}
	if fi.spec.Bytes > 0 {
		argv = append(argv, "--bytes", strconv.FormatInt(fi.spec.Bytes, 10))
	} else {
		argv = append(argv, "--time", fi.spec.Duration.String())
	}
	return strings.Join(argv, " ") + "   # run in-process by mptcp-lab (lab/xfer)"
}

// runXfer runs the transfer with the project's own tool, in this process.
func (fi *flowInst) runXfer(ctx context.Context, t0 time.Time, srv *xfer.Server, warmup time.Duration) {
	if !fi.waitStart(ctx, t0) {
		return
	}
	f := fi.spec
	fi.mu.Lock()
	fi.started = true
	fi.startedAt = time.Now()
	fi.res.StartS = fi.startedAt.Sub(t0).Seconds()
	fi.mu.Unlock()
	c, err := xfer.Start(xfer.Options{NS: fi.ns, Local: fi.local, Remote: fi.remote, MPTCP: f.MPTCP,
		CC: fi.ccKernel, Bytes: f.Bytes, For: f.Duration})
	if err != nil {
		fi.fail(err)
		return
	}
	fi.mu.Lock()
	fi.initial = c.Local()
	fi.res.Local = c.Local().String()
	fi.mu.Unlock()
	recv, err := srv.Conn(c.Local())
	if err != nil {
		fi.fail(err)
		return
	}
	fi.mu.Lock()
	fi.recv = recv
	fi.mu.Unlock()

	tp := fi.measure(recv, warmup)
	done := make(chan struct{})
	var res xfer.Result
	var werr error
	go func() {
		res, werr = c.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		tp.stop()
		fi.fail(fmt.Errorf("interrupted: %w", ctx.Err()))
		return
	}
	fi.xferDone(res, werr, recv, tp, warmup)
}

// throughput takes the receiver's byte count at the end of the warmup and
// of the duration of a timed flow.
type throughput struct {
	mu     sync.Mutex
	b1, b2 int64 // -1 until taken
	timers []*time.Timer
}

// measure starts taking the counts of a timed flow.
func (fi *flowInst) measure(recv *xfer.Received, warmup time.Duration) *throughput {
	tp := &throughput{b1: -1, b2: -1}
	if fi.spec.Duration == 0 {
		return tp
	}
	at := func(d time.Duration, dst *int64) {
		tp.timers = append(tp.timers, time.AfterFunc(time.Until(fi.startedAt.Add(d)), func() {
			tp.mu.Lock()
			*dst = recv.Bytes()
			tp.mu.Unlock()
		}))
	}
	if warmup > 0 {
		at(warmup, &tp.b1)
	} else {
		tp.b1 = 0
	}
	at(fi.spec.Duration, &tp.b2)
	return tp
}

func (tp *throughput) stop() {
	for _, t := range tp.timers {
		t.Stop()
	}
}

// xferDone records the result of a finished transfer.
func (fi *flowInst) xferDone(res xfer.Result, werr error, recv *xfer.Received, tp *throughput, warmup time.Duration) {
	f := fi.spec
	end := time.Now()
	fi.mu.Lock()
	defer fi.mu.Unlock()
	fi.finished = true
	r := &fi.res
	if werr != nil {
		r.Error = werr.Error()
	}
	r.Sent, r.Delivered, r.Intact, r.CCActual = res.Sent, res.Delivered, res.Intact, res.CC
	r.ElapsedS = res.Duration.Seconds()
	if res.Duration == 0 {
		r.ElapsedS = end.Sub(fi.startedAt).Seconds()
	}
	if !recv.End.IsZero() {
		r.CompletionS = recv.End.Sub(fi.startedAt).Seconds()
	} else {
		r.CompletionS = r.ElapsedS
	}
	if f.Duration > 0 {
		tp.mu.Lock()
		if tp.b1 >= 0 && tp.b2 >= tp.b1 {
			r.ThroughputMbps = float64(tp.b2-tp.b1) * 8 / (f.Duration - warmup).Seconds() / 1e6
		}
		tp.mu.Unlock()
	} else if r.CompletionS > 0 {
		r.ThroughputMbps = float64(r.Delivered) * 8 / r.CompletionS / 1e6
	}
	if werr == nil && !r.Intact {
		r.Error = fmt.Sprintf("data not intact: sent %d, server counted %d", res.Sent, res.Delivered)
	}
}

// ---- iperf3 ----

func iperfPrefix(ns string, mptcp bool) []string {
	argv := []string{"ip", "netns", "exec", ns}
	if mptcp {
		argv = append(argv, "mptcpize", "run")
	}
	return argv
}

func (fi *flowInst) iperfServerArgv() []string {
	return append(iperfPrefix(fi.srvNS, fi.spec.MPTCP), "iperf3", "-s", "-1", "-p", strconv.Itoa(fi.port), "-B", fi.remote.Addr().String())
}

func (fi *flowInst) iperfClientArgv(interval, warmup time.Duration) []string {
	f := fi.spec
	argv := append(iperfPrefix(fi.ns, f.MPTCP), "iperf3", "-c", fi.remote.Addr().String(), "-p", strconv.Itoa(fi.port),
		"-B", fi.local.String(), "--cport", strconv.Itoa(fi.cport), "-J")
	if fi.ccKernel != "" {
		argv = append(argv, "-C", fi.ccKernel)
	}
	iv := max(interval, 100*time.Millisecond)
	argv = append(argv, "-i", strconv.FormatFloat(iv.Seconds(), 'f', -1, 64))
	if f.Bytes > 0 {
		argv = append(argv, "-n", strconv.FormatInt(f.Bytes, 10))
	} else {
		w := int(warmup / time.Second)
		argv = append(argv, "-t", strconv.Itoa(int((f.Duration-time.Duration(w)*time.Second)/time.Second)))
		if w > 0 {
			argv = append(argv, "-O", strconv.Itoa(w))
		}
	}
	return append(argv, f.IperfArgs...)
}

func startProc(argv []string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// Die with the lab: a killed run must not leave iperf3 behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return cmd, &out, &errb, nil
}

type iperfJSON struct {
	Start struct {
		Connected []struct {
			LocalHost  string `json:"local_host"`
			LocalPort  int    `json:"local_port"`
			RemoteHost string `json:"remote_host"`
			RemotePort int    `json:"remote_port"`
		} `json:"connected"`
	} `json:"start"`
	Intervals []struct {
		Sum struct {
			Start   float64 `json:"start"`
			End     float64 `json:"end"`
			Bytes   int64   `json:"bytes"`
			Omitted bool    `json:"omitted"`
		} `json:"sum"`
	} `json:"intervals"`
	End struct {
		SumSent struct {
			Bytes       int64   `json:"bytes"`
			Seconds     float64 `json:"seconds"`
			Retransmits uint64  `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Bytes         int64   `json:"bytes"`
			Seconds       float64 `json:"seconds"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		Streams []struct {
			Sender struct {
				CC string `json:"congestion"`
			} `json:"sender"`
		} `json:"streams"`
		SenderCC string `json:"sender_tcp_congestion"`
	} `json:"end"`
	Error string `json:"error"`
}

// runIperf runs the transfer with iperf3 (through mptcpize for MPTCP).
func (fi *flowInst) runIperf(ctx context.Context, t0 time.Time, interval, warmup time.Duration) {
	if !fi.waitStart(ctx, t0) {
		return
	}
	argv := fi.iperfClientArgv(interval, warmup)
	fi.mu.Lock()
	fi.started = true
	fi.startedAt = time.Now()
	fi.res.StartS = fi.startedAt.Sub(t0).Seconds()
	fi.initial = netip.AddrPortFrom(fi.local, uint16(fi.cport))
	fi.res.Local = fi.initial.String()
	fi.mu.Unlock()
	cmd, out, errb, err := startProc(argv)
	if err != nil {
		fi.fail(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		fi.fail(fmt.Errorf("interrupted: %w", ctx.Err()))
		return
	}
	end := time.Now()
	var j iperfJSON
	jerr := json.Unmarshal(out.Bytes(), &j)
	fi.mu.Lock()
	defer fi.mu.Unlock()
	fi.finished = true
	r := &fi.res
	r.ElapsedS = end.Sub(fi.startedAt).Seconds()
	switch {
	case jerr != nil:
		r.Error = fmt.Sprintf("iperf3 output: %v (%v; stderr: %s)", jerr, werr, strings.TrimSpace(errb.String()))
		return
	case j.Error != "":
		r.Error = "iperf3: " + j.Error
		return
	case werr != nil:
		r.Error = fmt.Sprintf("iperf3: %v: %s", werr, strings.TrimSpace(errb.String()))
	}
	r.Sent, r.Delivered = j.End.SumSent.Bytes, j.End.SumReceived.Bytes
	// iperf3 checks no content and counts received bytes over its own
	// test time; "intact" only means it ran to the end without error.
	r.Intact = werr == nil && r.Delivered > 0
	r.ThroughputMbps = j.End.SumReceived.BitsPerSecond / 1e6
	r.CompletionS = j.End.SumReceived.Seconds
	if fi.spec.Duration == 0 && r.CompletionS == 0 {
		r.CompletionS = r.ElapsedS
	}
	r.CCActual = j.End.SenderCC
	if len(j.End.Streams) > 0 && r.CCActual == "" {
		r.CCActual = j.End.Streams[0].Sender.CC
	}
	if r.Retrans == 0 {
		r.Retrans = j.End.SumSent.Retransmits
	}
	off := fi.startedAt.Sub(t0).Seconds()
	var cum int64
	for _, iv := range j.Intervals {
		cum += iv.Sum.Bytes
		fi.iperfGood = append(fi.iperfGood, report.GoodputSample{T: off + iv.Sum.End, Flow: fi.name, Bytes: cum})
	}
}

// waitListening polls the server namespace until every port listens.
func waitListening(ns string, ports []int, timeout time.Duration) error {
	d, err := sockdiag.DialNS(ns)
	if err != nil {
		return err
	}
	defer d.Close()
	want := map[uint16]bool{}
	for _, p := range ports {
		want[uint16(p)] = true
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		socks, err := d.TCP(unix.AF_INET, sockdiag.Listening)
		if err != nil {
			return err
		}
		n := 0
		for _, s := range socks {
			if want[s.Local.Port()] {
				n++
			}
		}
		if n >= len(want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("iperf3 servers in %s: %d of %d listening after %v", ns, n, len(want), timeout)
		}
	}
}
