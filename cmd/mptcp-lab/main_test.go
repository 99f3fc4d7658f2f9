// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/lab/runner"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mptcp-lab-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "mptcp-lab")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building mptcp-lab: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// A long scenario: emulated links (user-space forwarders), two of our
// congestion controls, an in-process transfer and an iperf3 pair.
const longScenario = `
name: long
links: {a: {rate: 20Mbit, delay: 10ms}, b: {rate: 10Mbit, loss: 0.1%}}
servers: {s: {}}
hosts: {h: {paths: [a, b]}}
flows:
  f: {cc: olia, duration: 60s}
  i: {cc: lia+lisa, tool: iperf3, duration: 60s}
`

// leftovers lists what of run id is on the system.
func leftovers(id runner.RunID) []string {
	var out []string
	ns, _ := topo.ListPrefix(id.NSPrefix() + "-")
	out = append(out, ns...)
	if _, err := os.Stat(id.PinRoot()); err == nil {
		out = append(out, "pins "+id.PinRoot())
	}
	names, _ := cc.Registered()
	for _, n := range names {
		if strings.HasPrefix(n, "l"+string(id)+"_") {
			out = append(out, "cc "+n)
		}
	}
	if _, err := os.Stat(filepath.Join(runner.StateDir, string(id))); err == nil {
		out = append(out, "run record")
	}
	if p, _ := exec.Command("pgrep", "-f", "l"+string(id)+"_").Output(); len(bytes.TrimSpace(p)) > 0 {
		out = append(out, "processes "+strings.Join(strings.Fields(string(p)), ","))
	}
	return out
}

func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

var runIDRE = regexp.MustCompile(`\(run ([0-9a-f]{6})\)`)

// startLong starts `mptcp-lab run` on the long scenario and returns once
// its network and congestion controls are up and its flows are running.
func startLong(t *testing.T, extra ...string) (*exec.Cmd, runner.RunID, *bytes.Buffer) {
	t.Helper()
	testenv.RequireRoot(t)
	dir := t.TempDir()
	sc := filepath.Join(dir, "long.yaml")
	if err := os.WriteFile(sc, []byte(longScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, append([]string{"run", sc, "--out", filepath.Join(dir, "out")}, extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ids := make(chan runner.RunID, 1)
	log := &bytes.Buffer{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := runIDRE.FindStringSubmatch(sc.Text()); m != nil {
				ids <- runner.RunID(m[1])
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-done
	})
	var id runner.RunID
	select {
	case id = <-ids:
	case <-time.After(20 * time.Second):
		t.Fatalf("no run id on stderr:\n%s", log)
	}
	t.Cleanup(func() { _, _ = runner.CleanRun(id) })
	// Up: namespaces, our two CCs registered, iperf3 client running.
	if !waitFor(20*time.Second, func() bool {
		l := leftovers(id)
		var ns, ccs, procs int
		for _, x := range l {
			switch {
			case strings.HasPrefix(x, "mplab-"):
				ns++
			case strings.HasPrefix(x, "cc "):
				ccs++
			case strings.HasPrefix(x, "processes"):
				procs++
			}
		}
		return ns == 4 && ccs == 2 && procs == 1
	}) {
		t.Fatalf("the run did not come up: %v\n%s", leftovers(id), log)
	}
	time.Sleep(time.Second) // traffic flowing
	return cmd, id, log
}

// Ctrl-C: the run stops, exits 130 and removes everything itself.
func TestInterruptCleansUp(t *testing.T) {
	cmd, id, log := startLong(t)
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit: %v, want status 130", err)
	}
	t.Logf("stopped %v after SIGINT", time.Since(start).Round(time.Millisecond))
	if l := leftovers(id); len(l) > 0 {
		t.Errorf("left behind after SIGINT: %v\n%s", l, log)
	}
	if !strings.Contains(log.String(), "stopping and cleaning up") {
		t.Errorf("no word of the interruption:\n%s", log)
	}
}

// SIGKILL: the process can do nothing; its janitor, which sees the pipe
// from the run close, removes everything.
func TestKillJanitorCleansUp(t *testing.T) {
	cmd, id, log := startLong(t)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !waitFor(20*time.Second, func() bool { return len(leftovers(id)) == 0 }) {
		t.Errorf("left behind 20 s after SIGKILL: %v\n%s", leftovers(id), log)
	}
}

// SIGKILL without a janitor (or with the janitor killed too): things are
// left, and `mptcp-lab clean` finds them by name and removes them.
func TestCleanAfterKill(t *testing.T) {
	cmd, id, _ := startLong(t, "--no-janitor")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	l := leftovers(id)
	var ns, ccs int
	for _, x := range l {
		if strings.HasPrefix(x, "mplab-") {
			ns++
		}
		if strings.HasPrefix(x, "cc ") {
			ccs++
		}
	}
	if ns != 4 || ccs != 2 {
		t.Fatalf("after SIGKILL without a janitor want the 4 namespaces and 2 CCs left, have %v", l)
	}
	out, err := exec.Command(binary, "clean").CombinedOutput()
	if err != nil {
		t.Fatalf("mptcp-lab clean: %v\n%s", err, out)
	}
	t.Logf("clean: %s", bytes.TrimSpace(out))
	if !strings.Contains(string(out), "run "+string(id)+": removed 4 namespace(s)") {
		t.Errorf("clean did not report the run:\n%s", out)
	}
	if l := leftovers(id); len(l) > 0 {
		t.Errorf("left after clean: %v", l)
	}
}

// Invalid scenarios fail before anything is built, naming the field.
func TestValidateErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nlinks: {a: {rate: fast}}\nservers: {s: {}}\nhosts: {h: {paths: [a, z]}}\nflows: {f: {cc: reno}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", bad}, {"run", bad}} {
		out, err := exec.Command(binary, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%v: %v, want exit status 1", args, err)
		}
		for _, w := range []string{"bad.yaml:2: links.a.rate", `bad.yaml:4: hosts.h.paths[1]: link "z" is not defined`, "flows.f: give bytes"} {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: output lacks %q:\n%s", args, w, out)
			}
		}
	}
	out, err := exec.Command(binary, "validate", "../../testdata/scenarios/smoke.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "smoke, 1 case(s)") {
		t.Errorf("validate smoke: %v\n%s", err, out)
	}
}
