// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// buildVersion builds the binary with a version of the test's choosing,
// as two releases of it would be.
func buildVersion(t *testing.T, version string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mptcp-cc")
	cmd := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/mptcp-cc/mptcp-cc/internal/version.Version="+version+" -X github.com/mptcp-cc/mptcp-cc/internal/version.Commit=c"+version, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// One release loads; `list` of the next release says the build is not its
// own; `upgrade` replaces it in place, and `list` then shows the new build
// and the generation.
func TestUpgradeCommand(t *testing.T) {
	root := testkernel.PinRoot(t)
	name := testenv.Unique("t_upg_")
	testkernel.UnloadAtCleanup(t, root, name)
	v1, v2 := buildVersion(t, "v9.0.0"), buildVersion(t, "v9.0.1")
	run := func(bin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--bpffs", root)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mptcp-cc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(v1, "load", "--algo", "balia", "--name", name)
	if out := run(v2, "list"); !strings.Contains(out, "v9.0.0: not this binary's build, mptcp-cc upgrade") {
		t.Errorf("list of another release does not flag the build:\n%s", out)
	}
	if out := run(v1, "upgrade"); !strings.Contains(out, name+": already this build (v9.0.0)") {
		t.Errorf("upgrade by the same release:\n%s", out)
	}
	if out := run(v2, "upgrade", "--name", name); !strings.Contains(out, name+": v9.0.0 -> v9.0.1 (generation 1)") {
		t.Errorf("upgrade:\n%s", out)
	}
	var list []struct {
		Name    string `json:"name"`
		Current bool   `json:"current"`
		Build   struct {
			Version    string `json:"version"`
			Generation int    `json:"generation"`
		} `json:"build"`
	}
	if err := json.Unmarshal([]byte(run(v2, "list", "--json")), &list); err != nil || len(list) != 1 ||
		list[0].Build.Version != "v9.0.1" || list[0].Build.Generation != 1 || !list[0].Current {
		t.Errorf("list --json after the upgrade: %+v %v", list, err)
	}
	if !cc.IsRegistered(name) {
		t.Errorf("%s is not registered after the upgrade", name)
	}
}

// A daemon of the next release adopts what the previous one loaded: by
// default it keeps the pinned build and warns; with `adopt: upgrade` it
// upgrades it in place.
func TestServeAdoptsAnotherBuild(t *testing.T) {
	root := testkernel.PinRoot(t)
	name := testenv.Unique("t_upd_")
	testkernel.UnloadAtCleanup(t, root, name)
	v1, v2 := buildVersion(t, "v9.1.0"), buildVersion(t, "v9.1.1")
	if out, err := exec.Command(v1, "load", "--algo", "lia", "--name", name, "--bpffs", root).CombinedOutput(); err != nil {
		t.Fatalf("load: %v\n%s", err, out)
	}
	for _, c := range []struct{ adopt, want, version string }{
		{"keep", "adopting a registration another build of mptcp-cc loaded", "v9.1.0"},
		{"upgrade", "upgraded in place", "v9.1.1"},
	} {
		config := filepath.Join(t.TempDir(), "config.yaml")
		cfg := "bpffs: " + root + "\non_exit: keep\nadopt: " + c.adopt + "\nalgorithms: [{algo: lia, name: " + name + "}]\n"
		if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		p := servetest.Start(t, v2, config, "--web.listen-address", "127.0.0.1:0")
		p.Ready()
		if !strings.Contains(p.Logs(), c.want) {
			t.Errorf("adopt: %s: the daemon did not log %q:\n%s", c.adopt, c.want, p.Logs())
		}
		if code := p.Stop(syscall.SIGTERM); code != 0 {
			t.Errorf("adopt: %s: exit %d:\n%s", c.adopt, code, p.Logs())
		}
		l, err := cc.List(root)
		if err != nil || len(l) != 1 || l[0].Build.Version != c.version {
			t.Errorf("adopt: %s: pinned %+v %v; want the build %s", c.adopt, l, err, c.version)
		}
	}
}
