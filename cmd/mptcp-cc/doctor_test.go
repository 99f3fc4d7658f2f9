// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/doctor"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

type doctorReport struct {
	Ready    bool             `json:"ready"`
	Findings []doctor.Finding `json:"findings"`
}

func (r doctorReport) find(check string, sev doctor.Severity, sub string) bool {
	for _, f := range r.Findings {
		if f.Check == check && f.Severity == sev && strings.Contains(f.Summary, sub) {
			return true
		}
	}
	return false
}

func runDoctor(t *testing.T, bin string, args ...string) (doctorReport, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"doctor", "--json"}, args...)...)
	out, _ := cmd.Output()
	var r doctorReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("doctor --json %v: %v\n%s", args, err, out)
	}
	return r, cmd.ProcessState.ExitCode()
}

// On this host: ready, the kernel can do everything the commands need,
// and the algorithm loaded under the root is this binary's build.
func TestDoctorHost(t *testing.T) {
	root := testkernel.PinRoot(t)
	bin := testenv.Binary(t, ".")
	name := testenv.Unique("t_doc_")
	testkernel.UnloadAtCleanup(t, root, name)
	if out, err := exec.Command(bin, "load", "--algo", "lia", "--name", name, "--bpffs", root).CombinedOutput(); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	r, code := runDoctor(t, bin, "--bpffs", root)
	if code != 0 || !r.Ready {
		t.Errorf("doctor on this host: exit %d, ready %v: %+v", code, r.Ready, r.Findings)
	}
	for _, w := range []struct {
		check string
		sev   doctor.Severity
		sub   string
	}{
		{"kernel", doctor.OK, "can load the coupled congestion controls"},
		{"kernel", doctor.OK, "can attach a congestion control policy"},
		{"mptcp", doctor.OK, "MPTCP enabled"},
		{"algorithms", doctor.OK, name + " (lia) loaded and registered, this binary's build"},
	} {
		if !r.find(w.check, w.sev, w.sub) {
			t.Errorf("no %s finding %q of %q: %+v", w.sev, w.check, w.sub, r.Findings)
		}
	}
	// The human form says the same, one line per finding, on stdout.
	out, err := exec.Command(bin, "doctor", "--bpffs", root).Output()
	if err != nil || !strings.Contains(string(out), "ok    kernel") || !strings.Contains(string(out), "ready (") {
		t.Errorf("doctor: %v\n%s", err, out)
	}
}

// A namespace made not ready: its path manager allows no second subflow,
// and a loaded CC is not in the allowed list, so the namespace cannot
// make it its default. doctor names both, with the fix, and exits 1.
func TestDoctorNamespaceNotReady(t *testing.T) {
	root := testkernel.PinRoot(t)
	bin := testenv.Binary(t, ".")
	name := testenv.Unique("t_doc_")
	testkernel.UnloadAtCleanup(t, root, name)
	ns := testenv.Namespace(t, "mpcc-doc")
	if err := netns.Exec(ns, "ip", "mptcp", "limits", "set", "subflows", "0"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "load", "--algo", "olia", "--name", name, "--bpffs", root).CombinedOutput(); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	r, code := runDoctor(t, bin, "--netns", ns, "--bpffs", root)
	if code != 1 || r.Ready {
		t.Errorf("doctor --netns %s: exit %d, ready %v; want 1, not ready", ns, code, r.Ready)
	}
	if !r.find("path manager", doctor.Fail, "has one subflow: the limit of extra subflows is 0") {
		t.Errorf("no failing path manager finding: %+v", r.Findings)
	}
	if !r.find("defaults", doctor.Warn, "cannot make "+name+" its default") {
		t.Errorf("no finding that %s cannot make %s its default: %+v", ns, name, r.Findings)
	}
	for _, f := range r.Findings {
		if f.Check == "path manager" && !strings.Contains(f.Fix, "ip -n "+ns+" mptcp limits set subflows 2") {
			t.Errorf("the path manager's fix %q does not name the namespace", f.Fix)
		}
	}
	// Fixed, the same namespace is ready.
	if err := netns.Exec(ns, "ip", "mptcp", "limits", "set", "subflows", "2"); err != nil {
		t.Fatal(err)
	}
	if r, code := runDoctor(t, bin, "--netns", ns, "--bpffs", root); code != 0 || !r.Ready {
		t.Errorf("after the fix: exit %d, ready %v: %+v", code, r.Ready, r.Findings)
	}
	cmd := exec.Command(bin, "doctor", "--netns", "t-no-such-ns")
	if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "no such network namespace") {
		t.Errorf("doctor --netns of a namespace that does not exist: exit %d, %q", cmd.ProcessState.ExitCode(), out)
	}
}
