// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// quickstart is the README's quick start, as a newcomer would paste it,
// made safe to run beside anything else: its own namespaces, a private pin
// root and a congestion control name of its own; the first line (make
// deps build) is what the suite has done already.
func quickstart(t *testing.T, bin, root, name, prefix string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- quickstart:begin -->\n```sh\n(.*?)```\n<!-- quickstart:end -->").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no quick start between <!-- quickstart:begin --> and <!-- quickstart:end -->")
	}
	lines := strings.Split(string(m[1]), "\n")
	if !strings.HasPrefix(lines[0], "sudo make deps build") {
		t.Fatalf("the quick start's first line is %q; this test skips it as make test's own set-up", lines[0])
	}
	script := strings.Join(lines[1:], "\n")
	script = strings.NewReplacer(
		"sudo ", "",
		"bin/mptcp-cc load --algo lia", bin+" load --algo lia --name "+name+" --bpffs "+root,
		"bin/mptcp-cc unload --algo lia", bin+" unload --name "+name+" --bpffs "+root,
		"bin/mptcp-cc", bin,
		"mptcp_lia", name,
		"qs-", prefix,
	).Replace(script)
	// Every other command reads the pins under root too.
	script = strings.ReplaceAll(script, bin+" top --once", bin+" top --once --bpffs "+root)
	script = strings.ReplaceAll(script, bin+" subflows", bin+" subflows --bpffs "+root)
	return "set -e\n" + script
}

// The README's quick start, run as written: it ends with one connection
// coupled over two subflows, and its coupled quantity moving.
func TestQuickStart(t *testing.T) {
	testenv.RequireTool(t, "iperf3", "iperf3")
	testenv.RequireTool(t, "mptcpize", "mptcpd")
	root := testkernel.PinRoot(t)
	bin := testenv.Binary(t, ".")
	name := testenv.Unique("t_qs_")
	prefix := "q" + testenv.Suffix() + "-"
	testkernel.UnloadAtCleanup(t, root, name)
	t.Cleanup(func() {
		for _, ns := range []string{prefix + "client", prefix + "server"} {
			if netns.Exists(ns) {
				_ = netns.Delete(ns)
			}
		}
	})
	cmd := exec.Command("bash", "-c", quickstart(t, bin, root, name, prefix))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "2 sf, 2 coupled") {
		t.Errorf("top --once does not show one connection with 2 coupled subflows:\n%s", text)
	}
	// The two subflows tables: the sender's rows (the client's side; the
	// receiver's, which iperf3 also gives the CC, send nothing and couple
	// nothing) are of one token, PATHS 2, alpha different between the two
	// reads.
	var alphas []string
	tokens := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) < 16 || f[2] != name || strings.HasSuffix(f[3], ":5201") {
			continue
		}
		tokens[f[0]] = true
		if f[15] != "2" {
			t.Errorf("subflow row with PATHS %s, want 2: %q", f[15], l)
		}
		alphas = append(alphas, f[14])
	}
	if len(alphas) != 4 || len(tokens) != 1 {
		t.Fatalf("want two subflows tables of two rows of one connection; got %d rows of %d tokens:\n%s", len(alphas), len(tokens), text)
	}
	if alphas[0] == alphas[2] && alphas[1] == alphas[3] {
		t.Errorf("the coupled quantity did not move in 2 s: %v\n%s", alphas, text)
	}
	if netns.Exists(prefix+"client") || netns.Exists(prefix+"server") {
		t.Errorf("the quick start left its namespaces")
	}
	t.Logf("quick start output:\n%s", text)
}
