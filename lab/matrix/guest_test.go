// SPDX-License-Identifier: Apache-2.0

package matrix

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// What the host side passes to TestGuestMatrix (through the VM's
// environment, or a child process's on the host).
const (
	guestOutEnv  = "MPTCP_CC_MATRIX_RESULT" // the file the result is written to; its presence runs the check
	guestBinEnv  = "MPTCP_CC_MATRIX_BIN"    // the mptcp-cc binary
	guestCCEnv   = "MPTCP_CC_MATRIX_CCTEST" // pkg/cc's test binary, for the differential replay ("" skips it)
	guestModeEnv = "MPTCP_CC_MATRIX_MODE"   // "full" or "fast"
	guestNameEnv = "MPTCP_CC_MATRIX_KERNEL" // the row's name
)

// TestGuestMatrix is the end-to-end check of one kernel, run where that
// kernel runs (in its VM, or on the host). It does what an operator does
// with the project's binary and records each step's outcome in the result
// file rather than stopping at the first failure, so the matrix shows
// everything that works and everything that does not. It fails if any step
// failed.
func TestGuestMatrix(t *testing.T) {
	out := os.Getenv(guestOutEnv)
	if out == "" {
		t.Skip("the matrix's in-kernel check: TestMatrix and TestMatrixFast run it")
	}
	g := &guest{t: t, bin: os.Getenv(guestBinEnv), fast: os.Getenv(guestModeEnv) == "fast"}
	g.r = Result{Kernel: os.Getenv(guestNameEnv), Arch: runtime.GOARCH, Date: time.Now().UTC().Format("2006-01-02"), Mode: "full"}
	if g.fast {
		g.r.Mode = "fast"
	}
	uname, _ := exec.Command("uname", "-r").Output()
	g.r.Release = strings.TrimSpace(string(uname))
	g.root = testkernel.PinRoot(t)
	start := time.Now()
	defer func() {
		g.r.Seconds = time.Since(start).Seconds()
		if t.Failed() && g.r.Passed() {
			// A helper's t.Fatal (building the network, say) ended
			// the check between steps: the row must not read as passed.
			g.r.Add("check", Fail, "stopped by a fatal error in the step after the last one listed (the test's log says which)")
		}
		if err := Write(out, g.r); err != nil {
			t.Errorf("writing the result: %v", err)
		}
		for _, s := range g.r.Steps {
			t.Logf("%-22s %-8s %s", s.Name, s.Status, s.Detail)
		}
	}()

	g.preflight()
	if !g.fast {
		g.doctor()
		for _, a := range cc.Algorithms() {
			g.loadListUnload(a.Name)
		}
	}
	g.transfer()
	if !g.fast {
		g.policy()
		g.replay()
	}
	g.nothingLeft()
	for _, s := range g.r.Steps {
		if s.Status == Fail {
			t.Errorf("%s failed: %s", s.Name, s.Detail)
		}
	}
}

type guest struct {
	t    *testing.T
	r    Result
	bin  string
	root string // a private bpffs's pin root
	fast bool
	need map[string]bool // the preflight's verdict per command: "load", "policy attach", "set"
}

// run runs the binary and returns its combined output and exit code.
func (g *guest) run(args ...string) (string, int) {
	cmd := exec.Command(g.bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		return fmt.Sprintf("running %s: %v", g.bin, err), -1
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// firstLine shortens a command's output for a detail.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// preflight records `version --json`'s verdicts and which commands this
// kernel can do by them (kernel.Need*: what each command needs).
func (g *guest) preflight() {
	out, rc := g.run("version", "--json")
	var v struct {
		Kernel struct {
			Features []Feature `json:"features"`
		} `json:"kernel"`
	}
	if err := json.Unmarshal([]byte(out), &v); rc != 0 || err != nil {
		g.r.Add("preflight", Fail, fmt.Sprintf("version --json: exit %d, %v: %s", rc, err, firstLine(out)))
		return
	}
	g.r.Features = v.Kernel.Features
	ok := map[string]bool{}
	for _, f := range v.Kernel.Features {
		ok[f.Name] = f.OK
	}
	g.need = map[string]bool{}
	var says []string
	for _, n := range []kernel.Need{kernel.NeedLoad, kernel.NeedPolicy, kernel.NeedSet} {
		can := true
		for _, f := range n.Features {
			can = can && ok[f]
		}
		g.need[n.Command] = can
		says = append(says, fmt.Sprintf("%s %s", n.Command, map[bool]string{true: "ok", false: "refused"}[can]))
	}
	g.r.Add("preflight", Pass, strings.Join(says, ", "))
}

// refusal checks a command the preflight says this kernel cannot do: exit
// 1, the missing feature named with its Linux version, no raw kernel
// error, nothing pinned.
func (g *guest) refusal(step string, args ...string) {
	out, rc := g.run(args...)
	left := g.leftIn(g.root)
	switch {
	case rc != 1:
		g.r.Add(step, Fail, fmt.Sprintf("want a refusal (exit 1), got exit %d: %s", rc, firstLine(out)))
	case !strings.Contains(out, "which Linux") || strings.Contains(out, "invalid argument"):
		g.r.Add(step, Fail, "the refusal does not name the missing feature and its version: "+firstLine(out))
	case left != "":
		g.r.Add(step, Fail, "refused but left "+left)
	default:
		g.r.Add(step, Refused, firstLine(out))
	}
}

// leftIn lists what is under dir ("" when it is empty or absent).
func (g *guest) leftIn(dir string) string {
	var left []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir {
			left = append(left, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	return strings.Join(left, " ")
}

// registered reports whether the kernel lists the congestion control.
func registered(name string) bool {
	b, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	return slices.Contains(strings.Fields(string(b)), name)
}

// load loads algo under a fresh name through the CLI and returns the name
// ("" and a failed step when it did not load).
func (g *guest) load(step, algo string) string {
	name := testenv.Unique("mx_" + algo + "_")
	if out, rc := g.run("load", "--algo", algo, "--name", name, "--bpffs", g.root); rc != 0 {
		g.r.Add(step, Fail, fmt.Sprintf("load: exit %d: %s", rc, firstLine(out)))
		return ""
	}
	g.t.Cleanup(func() {
		if registered(name) {
			_ = cc.Unload(name, g.root)
		}
	})
	return name
}

// unload unloads name through the CLI and checks it is gone: not
// registered, nothing pinned. Connections that just closed may hold it a
// moment (unload refuses while live subflows run it): retried for 10 s.
func (g *guest) unload(name string) error {
	var out string
	var rc int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if out, rc = g.run("unload", "--name", name, "--bpffs", g.root); rc == 0 || time.Now().After(deadline) {
			break
		}
	}
	switch {
	case rc != 0:
		return fmt.Errorf("unload: exit %d: %s", rc, firstLine(out))
	case registered(name):
		return fmt.Errorf("%s still registered after unload", name)
	case g.leftIn(filepath.Join(g.root, name)) != "":
		return fmt.Errorf("left pinned after unload: %s", g.leftIn(filepath.Join(g.root, name)))
	}
	return nil
}

func (g *guest) doctor() {
	out, rc := g.run("doctor", "--json")
	var d struct {
		Ready    bool `json:"ready"`
		Findings []struct {
			Check    string `json:"check"`
			Severity string `json:"severity"`
			Summary  string `json:"summary"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		g.r.Add("doctor", Fail, fmt.Sprintf("doctor --json: exit %d, %v: %s", rc, err, firstLine(out)))
		return
	}
	var kernelFail, failing []string
	for _, f := range d.Findings {
		if f.Severity == "fail" {
			failing = append(failing, f.Check)
			if f.Check == "kernel" {
				kernelFail = append(kernelFail, f.Summary)
			}
		}
	}
	detail := fmt.Sprintf("exit %d, ready %v, failing checks %v", rc, d.Ready, failing)
	switch {
	case g.need["load"] && len(kernelFail) > 0:
		g.r.Add("doctor", Fail, detail+": the kernel check fails where the preflight passes: "+strings.Join(kernelFail, "; "))
	case !g.need["load"] && (len(kernelFail) == 0 || d.Ready || rc != 1):
		g.r.Add("doctor", Fail, detail+": the kernel lacks features and doctor does not say NOT READY for it")
	case !g.need["load"]:
		g.r.Add("doctor", Refused, detail+": "+kernelFail[0])
	default:
		g.r.Add("doctor", Pass, detail)
	}
}

// loadListUnload: load, list shows it, the kernel lists it, unload leaves
// nothing; or the clean refusal where the preflight says no.
func (g *guest) loadListUnload(algo string) {
	step := "load/list/unload " + algo
	if !g.need["load"] {
		g.refusal(step, "load", "--algo", algo, "--bpffs", g.root)
		return
	}
	name := g.load(step, algo)
	if name == "" {
		return
	}
	list, rc := g.run("list", "--json", "--bpffs", g.root)
	if rc != 0 || !strings.Contains(list, `"`+name+`"`) || !registered(name) {
		g.r.Add(step, Fail, fmt.Sprintf("after load: list exit %d shows it %v, registered %v", rc, strings.Contains(list, `"`+name+`"`), registered(name)))
		return
	}
	if err := g.unload(name); err != nil {
		g.r.Add(step, Fail, err.Error())
		return
	}
	g.r.Add(step, Pass, "registered as "+name+", listed, unloaded, nothing left")
}

// transfer: a two-path MPTCP transfer under a coupled CC loaded by the
// CLI: both subflows in the CC's map with the coupled quantity moving,
// `serve` scraped once (full mode) with both subflows' cwnd and srtt, `set`
// on the live connection (full mode), every byte delivered, then unload.
func (g *guest) transfer() {
	const step = "transfer lia"
	if !g.need["load"] {
		if g.fast {
			g.refusal("load lia", "load", "--algo", "lia", "--bpffs", g.root)
			return
		}
		g.refusal("serve", "serve", "--config", g.serveConfig("lia", "mx_refused"), "--events.disable")
		g.refusal("set", "set", "--token", "1234abcd", "--algo", "cubic")
		return
	}
	name := g.load(step, "lia")
	if name == "" {
		return
	}
	// Under TCG every command takes a second or more, so the transfer
	// runs until the checks that need it live are done, then stops: at
	// least 3 s of it, so the windows grow and the coupling shows.
	n := testkernel.TwoPaths(g.t, 4e6)
	_, c := testkernel.Transfer(g.t, n, xfer.Options{CC: name, For: 3 * time.Minute})
	started := time.Now()
	subs, moved := g.coupling(name)
	detail := ""
	for _, s := range subs {
		detail += fmt.Sprintf("subflow %d: cwnd %d, srtt %v, %s %.4g; ", s.SubflowID, s.Cwnd, s.SRTT.Round(time.Microsecond), s.CoupledName, s.Coupled)
	}
	coupled := len(subs) == 2 && subs[0].Paths == 2 && subs[1].Paths == 2 && moved
	if !g.fast && len(subs) > 0 {
		g.serve(name, len(subs))
		g.set(n.Client, subs[0].Token)
	}
	time.Sleep(3*time.Second - time.Since(started))
	c.Stop()
	res, err := c.Wait()
	intact := err == nil && res.Intact && res.Delivered == res.Sent
	detail += fmt.Sprintf("%d bytes in %v, intact %v", res.Delivered, res.Duration.Round(time.Millisecond), intact)
	switch {
	case !coupled:
		g.r.Add(step, Fail, "want 2 subflows, each coupled over 2 paths, the coupled quantity moving: "+detail)
	case !intact:
		g.r.Add(step, Fail, fmt.Sprintf("%v: %s", err, detail))
	default:
		g.r.Add(step, Pass, detail)
	}
	if err := g.unload(name); err != nil {
		g.r.Add("unload after transfer", Fail, err.Error())
	} else {
		g.r.Add("unload after transfer", Pass, "not registered, nothing pinned")
	}
}

// coupling reads the CC's subflows until both are coupled over two paths
// and returns the last read, and whether the coupled quantity changed
// between reads (it moves with the windows: a frozen one is not coupling).
func (g *guest) coupling(name string) ([]stats.Subflow, bool) {
	seen := map[float64]bool{}
	var subs []stats.Subflow
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(400 * time.Millisecond) {
		out, rc := g.run("subflows", "--json", "--bpffs", g.root)
		var all []stats.Subflow
		if rc != 0 || json.Unmarshal([]byte(out), &all) != nil {
			continue
		}
		subs = subs[:0]
		for _, s := range all {
			if s.CC == name {
				subs = append(subs, s)
			}
		}
		if len(subs) == 2 && subs[0].Paths == 2 {
			seen[subs[0].Coupled] = true
			if len(seen) >= 3 {
				break
			}
		}
	}
	return subs, len(seen) >= 2
}

// serveConfig writes a daemon configuration that adopts (or loads) algo
// under name in the guest's pin root and keeps it on exit.
func (g *guest) serveConfig(algo, name string) string {
	file := filepath.Join(g.t.TempDir(), "serve.yaml")
	cfg := fmt.Sprintf("bpffs: %s\non_exit: keep\nalgorithms:\n  - {algo: %s, name: %s}\nmetrics: {listen_address: \"127.0.0.1:0\"}\nevents: {enabled: false}\n", g.root, algo, name)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		g.t.Fatal(err)
	}
	return file
}

// serve adopts the loaded CC and is scraped once: both subflows' cwnd and
// srtt must be there.
func (g *guest) serve(name string, subflows int) {
	d := servetest.Start(g.t, g.bin, g.serveConfig("lia", name))
	body := servetest.Get(g.t, d.Ready())
	cwnd := strings.Count(body, "mptcp_cc_subflow_cwnd_segments{")
	srtt := strings.Count(body, "mptcp_cc_subflow_srtt_seconds{")
	d.Stop(15) // SIGTERM; on_exit keep leaves the CC to the check
	detail := fmt.Sprintf("one scrape: %d cwnd and %d srtt series for %d subflows, scrape error %v",
		cwnd, srtt, subflows, !strings.Contains(body, "mptcp_cc_scrape_error 0"))
	if cwnd != subflows || srtt != subflows || !strings.Contains(body, "mptcp_cc_scrape_error 0") {
		g.r.Add("serve", Fail, detail)
		return
	}
	g.r.Add("serve", Pass, detail)
}

// set switches the live connection to cubic.
func (g *guest) set(ns string, token uint32) {
	if !g.need["set"] {
		g.refusal("set", "set", "--token", fmt.Sprintf("%08x", token), "--algo", "cubic", "--netns", ns)
		return
	}
	out, rc := g.run("set", "--token", fmt.Sprintf("%08x", token), "--algo", "cubic", "--netns", ns, "--json")
	var s struct {
		Switched int `json:"switched"`
	}
	if rc != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Switched == 0 {
		g.r.Add("set", Fail, fmt.Sprintf("exit %d: %s", rc, firstLine(out)))
		return
	}
	g.r.Add("set", Pass, fmt.Sprintf("switched %d subflow(s) of the live connection to cubic", s.Switched))
}

// policy attaches a rule giving a cgroup the kernel's cubic (so it needs
// no CC of ours), sees it listed, detaches it, and sees nothing pinned.
func (g *guest) policy() {
	root := filepath.Join(filepath.Dir(g.root), "policy")
	cg := testkernel.Cgroup(g.t, "")
	args := []string{"policy", "attach", "--cgroup", cg, "--algo", "cubic", "--bpffs", root}
	if !g.need["policy attach"] {
		g.refusal("policy attach", args...)
		return
	}
	if out, rc := g.run(args...); rc != 0 {
		g.r.Add("policy attach", Fail, fmt.Sprintf("exit %d: %s", rc, firstLine(out)))
		return
	}
	list, _ := g.run("policy", "list", "--json", "--bpffs", root)
	listed := strings.Contains(list, `"cubic"`)
	out, rc := g.run("policy", "detach", "--cgroup", cg, "--bpffs", root)
	left := g.leftIn(root)
	if !listed || rc != 0 || left != "" {
		g.r.Add("policy attach", Fail, fmt.Sprintf("listed %v, detach exit %d (%s), left %q", listed, rc, firstLine(out), left))
		return
	}
	g.r.Add("policy attach", Pass, "a cubic rule on a fresh cgroup attached, listed, detached, nothing left")
}

// replay runs pkg/cc's differential test here: every algorithm on two
// lossy paths, each BPF decision replayed through the Go model.
func (g *guest) replay() {
	bin := os.Getenv(guestCCEnv)
	if bin == "" || !g.need["load"] {
		g.r.Add("differential replay", Skip, map[bool]string{true: "pkg/cc's test binary not given", false: "the kernel cannot load the CCs"}[bin == ""])
		return
	}
	cmd := exec.Command(bin, "-test.run", "^TestBPFMatchesModel$", "-test.count=1", "-test.v")
	cmd.Dir = filepath.Dir(bin)
	out, err := cmd.CombinedOutput()
	var ident []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "all identical") {
			_, after, _ := strings.Cut(l, ".go:")
			_, after, _ = strings.Cut(after, ": ")
			ident = append(ident, strings.TrimSpace(after))
		}
	}
	if err != nil {
		tail := string(out)
		if len(tail) > 600 {
			tail = tail[len(tail)-600:]
		}
		g.r.Add("differential replay", Fail, fmt.Sprintf("%v: %s", err, tail))
		return
	}
	g.r.Add("differential replay", Pass, strings.Join(ident, "; "))
}

// nothingLeft: no pin under the root, no CC of the check's registered.
func (g *guest) nothingLeft() {
	b, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	var ours []string
	for _, n := range strings.Fields(string(b)) {
		if strings.HasPrefix(n, "mx_") {
			ours = append(ours, n)
		}
	}
	if left := g.leftIn(g.root); left != "" || len(ours) > 0 {
		g.r.Add("nothing left", Fail, fmt.Sprintf("pinned: %q, registered: %v", left, ours))
		return
	}
	g.r.Add("nothing left", Pass, "no pin under the pin root, no CC of the check registered")
}
