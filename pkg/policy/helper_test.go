// SPDX-License-Identifier: Apache-2.0

package policy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// sock_ops programs act on sockets by the cgroup of the task that created
// them, so the sockets under test are opened by a child process started
// straight into the cgroup (clone3 with CLONE_INTO_CGROUP): this test binary,
// re-executed in a helper mode chosen by this variable.
const helperEnv = "MPTCP_CC_POLICY_TEST_HELPER"

type helperConfig struct {
	Mode   string       `json:"mode"` // "client", "server" or "bench"
	NS     string       `json:"ns"`
	Conns  []helperConn `json:"conns,omitempty"`  // client
	Listen string       `json:"listen,omitempty"` // server
	Bench  benchConfig  `json:"bench"`
}

type helperConn struct {
	Local  string `json:"local,omitempty"` // source address
	Remote string `json:"remote"`
	TCP    bool   `json:"tcp,omitempty"` // plain TCP instead of MPTCP
	ForMs  int    `json:"for_ms"`
}

// helperEvent is one line the helper prints.
type helperEvent struct {
	Locals  []string      `json:"locals,omitempty"`  // client: connected, initial subflows' local addresses
	Addr    string        `json:"addr,omitempty"`    // server: listening
	Results []xfer.Result `json:"results,omitempty"` // client: done
	Bench   *benchResult  `json:"bench,omitempty"`
	Err     string        `json:"err,omitempty"`
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(helperEnv); cfg != "" {
		os.Exit(runHelper(cfg))
	}
	os.Exit(m.Run())
}

func runHelper(raw string) int {
	var cfg helperConfig
	enc := json.NewEncoder(os.Stdout)
	fail := func(err error) int {
		_ = enc.Encode(helperEvent{Err: err.Error()})
		return 1
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return fail(err)
	}
	switch cfg.Mode {
	case "client":
		var clients []*xfer.Client
		var locals []string
		for _, c := range cfg.Conns {
			o := xfer.Options{NS: cfg.NS, Remote: netip.MustParseAddrPort(c.Remote), MPTCP: !c.TCP, For: time.Duration(c.ForMs) * time.Millisecond}
			if c.Local != "" {
				o.Local = netip.MustParseAddr(c.Local)
			}
			cl, err := xfer.Start(o)
			if err != nil {
				return fail(err)
			}
			clients = append(clients, cl)
			locals = append(locals, cl.Local().String())
		}
		_ = enc.Encode(helperEvent{Locals: locals})
		var results []xfer.Result
		for _, cl := range clients {
			r, err := cl.Wait()
			if err != nil {
				return fail(err)
			}
			results = append(results, r)
		}
		_ = enc.Encode(helperEvent{Results: results})
		return 0
	case "server":
		srv, err := xfer.Listen(cfg.NS, netip.MustParseAddrPort(cfg.Listen), true)
		if err != nil {
			return fail(err)
		}
		_ = enc.Encode(helperEvent{Addr: srv.Addr().String()})
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin
		_ = srv.Close()
		return 0
	case "bench":
		r, err := runBench(cfg)
		if err != nil {
			return fail(err)
		}
		_ = enc.Encode(helperEvent{Bench: &r})
		return 0
	}
	return fail(fmt.Errorf("unknown helper mode %q", cfg.Mode))
}

// helper is a running helper process.
type helper struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  interface{ Close() error }
	lines  chan helperEvent
	stderr *bytes.Buffer
}

// spawn starts a helper inside the cgroup dir; it is killed at cleanup if
// it still runs.
func spawn(t testing.TB, cgroupDir string, cfg helperConfig) *helper {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(raw))
	testkernel.IntoCgroup(t, cmd, cgroupDir)
	h := &helper{t: t, cmd: cmd, lines: make(chan helperEvent, 16), stderr: &bytes.Buffer{}}
	cmd.Stderr = h.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a helper in cgroup %s: %v", cgroupDir, err)
	}
	t.Cleanup(func() {
		_ = h.stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			var ev helperEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev.Err = fmt.Sprintf("helper printed %q", sc.Text())
			}
			h.lines <- ev
		}
	}()
	return h
}

// next returns the helper's next event, failing on an error event.
func (h *helper) next() helperEvent {
	h.t.Helper()
	select {
	case ev, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("helper exited early: %s", h.stderr.String())
		}
		if ev.Err != "" {
			h.t.Fatalf("helper: %s", ev.Err)
		}
		return ev
	case <-time.After(60 * time.Second):
		h.t.Fatalf("helper silent for a minute: %s", h.stderr.String())
	}
	return helperEvent{}
}

// newCgroup is testkernel.Cgroup (shared with the other packages' tests).
func newCgroup(t testing.TB, parent string) string { return testkernel.Cgroup(t, parent) }

// programsOn lists the sock_ops programs attached to a cgroup.
func programsOn(t testing.TB, cgroupDir string) []ebpf.ProgramID {
	t.Helper()
	f, err := os.Open(cgroupDir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := link.QueryPrograms(link.QueryOptions{Target: int(f.Fd()), Attach: ebpf.AttachCGroupSockOps})
	if err != nil {
		t.Fatal(err)
	}
	var ids []ebpf.ProgramID
	for _, p := range res.Programs {
		ids = append(ids, p.ID)
	}
	return ids
}

// env is what the traffic tests share: a private bpffs with roots for
// loaded CCs and policies, and a two-path network.
type env struct {
	ccRoot, policyRoot string
	net                *topo.Net
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ccRoot := testkernel.PinRoot(t)
	e := &env{ccRoot: ccRoot, policyRoot: filepath.Join(filepath.Dir(ccRoot), "mptcp-cc-policy")}
	e.net = testkernel.TwoPaths(t, 20e6)
	return e
}

// attach adds a rule and detaches the cgroup's policy at cleanup.
func (e *env) attach(t *testing.T, r policy.Rule) {
	t.Helper()
	if err := policy.Attach(r, e.policyRoot); err != nil {
		t.Fatalf("attach %+v: %v", r, err)
	}
	t.Cleanup(func() {
		if err := policy.Detach(r.Cgroup, e.policyRoot); err != nil && !errors.Is(err, policy.ErrNoPolicy) {
			t.Errorf("detach %s: %v", r.Cgroup, err)
		}
	})
}

// connCC finds the connection whose initial subflow has this local
// address, waits until it has want subflows in the map of one loaded CC,
// and returns that CC and the subflows. Plain TCP sockets count as a
// connection of one. "" means no loaded CC has the socket within the wait.
func (e *env) connCC(t *testing.T, local netip.AddrPort, want int, wait time.Duration) (string, []stats.Subflow) {
	t.Helper()
	var last []stats.Subflow
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		all, err := stats.ReadAll(e.ccRoot)
		if err != nil {
			t.Fatal(err)
		}
		var first *stats.Subflow
		for i := range all {
			if all[i].Local == local {
				first = &all[i]
			}
		}
		if first != nil {
			var conn []stats.Subflow
			for _, s := range all {
				if s.Local == local || (first.MPTCP && s.MPTCP && s.Token == first.Token && s.CC == first.CC) {
					conn = append(conn, s)
				}
			}
			last = conn
			if len(conn) >= want {
				return first.CC, conn
			}
		}
		if time.Now().After(deadline) {
			if len(last) > 0 {
				return last[0].CC, last
			}
			return "", nil
		}
	}
}

// kernelCC returns the congestion control of every TCP socket (MPTCP
// subflows included) in a namespace, by local and remote address, as
// sock_diag reports it (INET_DIAG_CONG): the states `ss -t` lists.
func kernelCC(t *testing.T, ns string) map[[2]netip.AddrPort]string {
	t.Helper()
	list, err := sockdiag.Dump(ns, 0, sockdiag.Connected|sockdiag.StateSet(sockdiag.SynSent))
	if err != nil {
		t.Fatal(err)
	}
	res := map[[2]netip.AddrPort]string{}
	for _, s := range list {
		if s.CC != "" {
			res[[2]netip.AddrPort{s.Local, s.Remote}] = s.CC
		}
	}
	return res
}

// defaultCC is the namespace's default congestion control.
func defaultCC(t *testing.T, ns string) string {
	t.Helper()
	out, err := netns.Output(ns, "sysctl", "-n", "net.ipv4.tcp_congestion_control")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// sockCCs returns the CC of every socket in ns whose local or remote end is
// the given address, as sock_diag reports it.
func sockCCs(t *testing.T, ns string, match func(local, remote netip.AddrPort) bool) []string {
	t.Helper()
	var out []string
	for k, cc := range kernelCC(t, ns) {
		if match(k[0], k[1]) {
			out = append(out, cc)
		}
	}
	return out
}
