// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"

	"github.com/mptcp-cc/mptcp-cc/internal/cli/clitest"
)

// version reports what this kernel has; on the development and CI machine
// that is BTF and struct_ops for congestion controls, and no scheduler hook.
func TestVersion(t *testing.T) {
	var out, stderr bytes.Buffer
	if code := app.Run([]string{"version", "--json"}, &out, &stderr); code != 0 {
		t.Fatalf("version: exit %d: %s", code, stderr.String())
	}
	var v struct {
		Version, Commit, Go string
		Ebpf                string `json:"cilium_ebpf"`
		BPFABI              string `json:"bpf_abi"`
		Kernel              struct {
			Release string
			BTF     bool `json:"btf"`
			CC      bool `json:"tcp_congestion_ops_struct_ops"`
			// one verdict per feature, with the version that brings it
			Features []struct {
				Name, Since string
				OK          bool
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if v.Version == "" || !strings.HasPrefix(v.Go, "go") || !strings.HasPrefix(v.Ebpf, "v") || v.Kernel.Release == "" {
		t.Errorf("version: %+v", v)
	}
	// The BPF ABI: what a loaded CC's build record carries, 16 hex digits.
	if abi, err := cc.ABI(); err != nil || v.BPFABI != abi || len(abi) != 16 {
		t.Errorf("version's BPF ABI %q; cc.ABI() %q %v", v.BPFABI, abi, err)
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err == nil && (!v.Kernel.BTF || !v.Kernel.CC) {
		t.Errorf("this kernel has BTF and tcp_congestion_ops struct_ops; version says %+v", v.Kernel)
	}
	since := map[string]string{}
	for _, f := range v.Kernel.Features {
		since[f.Name] = f.Since
		if f.Name == "struct_ops_link" && v.Kernel.BTF && !f.OK {
			t.Errorf("this kernel (6.4 or newer) has struct_ops links; version says %+v", f)
		}
	}
	if since["struct_ops_link"] != "6.4" || since["bpf_rdonly_cast"] != "6.2" || since["bpf_skc_to_mptcp_sock"] != "5.19" {
		t.Errorf("version --json: the features and their versions: %+v", v.Kernel.Features)
	}
}

// Every command documents itself: a summary; -h on stdout with a synopsis
// that names every flag, each flag with two dashes and a value name, and
// the same flags in the man page and the completions (clitest); the man
// page is clean roff.
func TestCommandsDocumented(t *testing.T) {
	for _, c := range app.Commands {
		if c.Summary == "" && !c.Hidden {
			t.Errorf("command %q lacks a summary", c.Name)
		}
	}
	clitest.Check(t, app)
	dir := t.TempDir()
	var stderr bytes.Buffer
	if code := app.Run([]string{"man", dir}, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("man: %s", stderr.String())
	}
	page, err := os.ReadFile(filepath.Join(dir, "mptcp-cc.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`mptcp\-cc policy attach`, `\-\-cgroup`, `mptcp\-cc version`, "EXIT STATUS"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("man page lacks %q", want)
		}
	}
	if out, err := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, "mptcp-cc.1")).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff (make deps installs groff-base): %v\n%s", err, out)
	}
}
