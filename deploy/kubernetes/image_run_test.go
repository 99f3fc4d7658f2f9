// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

// The image built for real (buildah, deploy/container/build.sh, as `make
// image` does) and run by a real OCI runtime (podman with runc) as the
// DaemonSet runs it: host network, every capability dropped but the
// DaemonSet's three, no_new_privs, a read-only root, the pin root, the
// host's cgroup v2 tree and BTF mounted, the configuration in a read-only
// /etc/mptcp-cc. It loads an algorithm from that configuration and exports
// its metrics; stopped, it leaves the algorithm registered; a new image
// version then adopts it and, told to, removes it.
//
// Three settings differ from a kubelet's default, and are what a runtime
// does, not what the image or the agent does: runc, since Debian 12's crun
// refuses this host's hybrid cgroup layout; the RLIMIT_NOFILE and
// RLIMIT_NPROC that podman sets are kept within this host's own, since
// raising them needs CAP_SYS_RESOURCE, which the sandbox the tests run in
// lacks; and the seccomp profile is the runtime's default with bpf(2)
// allowed to CAP_BPF (seccompWithBPF), since Debian 12's default allows it
// only with CAP_SYS_ADMIN (docs/fleet.md, "What the nodes need").
func TestImageRunsAsTheDaemonSet(t *testing.T) {
	testenv.RequireRoot(t)
	podman := testenv.RequireTool(t, "podman", "podman")
	testenv.RequireTool(t, "buildah", "buildah")
	runc := testenv.RequireTool(t, "runc", "runc")
	c := container(t, load(t))
	grace := time.Duration(*load(t).ds.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second

	repo := "localhost/" + testenv.Unique("mptcp-cc-test-")
	buildImage := func(tag, version string) string {
		bin := filepath.Join(t.TempDir(), "mptcp-cc")
		build := exec.Command("go", "build", "-o", bin, "../../cmd/mptcp-cc")
		build.Env = append(os.Environ(), "CGO_ENABLED=0",
			"GOFLAGS=-ldflags=-X=github.com/mptcp-cc/mptcp-cc/internal/version.Version="+version)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		image := repo + ":" + tag
		if out, err := exec.Command("../container/build.sh", bin, image).CombinedOutput(); err != nil {
			t.Fatalf("deploy/container/build.sh: %v\n%s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command(podman, "rmi", "--force", image).Run() })
		return image
	}
	v1 := buildImage("v1", testVersion)
	v2 := buildImage("v2", testVersion+"-2")

	// The pin root: a private bpffs, mounted into the container at the
	// same path as the DaemonSet mounts the host's /sys/fs/bpf.
	root := testkernel.PinRoot(t)
	name := testenv.Unique("t_img_")
	testkernel.UnloadAtCleanup(t, root, name)
	cgroups, err := policy.CgroupMount()
	if err != nil {
		t.Fatalf("the DaemonSet mounts the host's cgroup v2 tree; this host has none: %v", err)
	}
	etc := t.TempDir()
	cfg := fmt.Sprintf("bpffs: %s\non_exit: keep\nalgorithms: [{algo: lia, name: %s}]\n", root, name)
	if err := os.WriteFile(filepath.Join(etc, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	seccomp := seccompWithBPF(t)
	var caps []string
	for _, cp := range c.SecurityContext.Capabilities.Add {
		caps = append(caps, "--cap-add="+string(cp))
	}
	bpffs := filepath.Dir(root)
	start := func(image string, extra ...string) (*pod, string) {
		ctr := testenv.Unique("mptcp-cc-test-")
		args := append([]string{"--runtime", runc, "run", "--rm", "--name", ctr,
			"--network=host", "--cap-drop=all"}, caps...)
		args = append(args, "--security-opt=no-new-privileges", "--security-opt=seccomp="+seccomp, "--read-only",
			"--ulimit=nofile=1024:1024", "--ulimit=nproc=1024:1024",
			"--volume="+etc+":/etc/mptcp-cc:ro",
			"--volume="+bpffs+":"+bpffs+":rslave",
			"--volume="+cgroups+":/sys/fs/cgroup:ro",
			"--volume=/sys/kernel/btf:/sys/kernel/btf:ro",
			image, "serve", "--config=/etc/mptcp-cc/config.yaml",
			"--web.listen-address=127.0.0.1:0", "--log.format=json")
		p := &pod{t: t, done: make(chan struct{})}
		p.cmd = exec.Command(podman, append(args, extra...)...)
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			_ = exec.Command(podman, "rm", "--force", "--time=1", ctr).Run()
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		})
		return p, ctr
	}

	first, ctr := start(v1)
	addr := first.serving()
	out, err := exec.Command(podman, "inspect", "--format", "{{.State.Pid}}", ctr).Output()
	pid, perr := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || perr != nil {
		t.Fatalf("podman inspect %s: %v %v", ctr, err, perr)
	}
	st, err := procStatus(pid, "CapEff", "CapBnd", "NoNewPrivs")
	if err != nil {
		t.Fatal(err)
	}
	want := capMask(t, c.SecurityContext.Capabilities.Add)
	for _, f := range []string{"CapEff", "CapBnd"} {
		if v, err := strconv.ParseUint(st[f], 16, 64); err != nil || v != want {
			t.Errorf("the container's %s is %s, want %016x (the DaemonSet's capabilities)", f, st[f], want)
		}
	}
	if st["NoNewPrivs"] != "1" {
		t.Errorf("the container's NoNewPrivs is %s, want 1", st["NoNewPrivs"])
	}
	metrics := scrape(t, addr)
	if info := buildInfo.FindString(metrics); !strings.Contains(info, `version="`+testVersion+`"`) {
		t.Errorf("mptcp_cc_build_info does not carry the image's version %s: %q", testVersion, info)
	}
	if !strings.Contains(metrics, `cc="`+name+`"`) || !cc.IsRegistered(name) {
		t.Fatalf("the container did not load %s from its configuration (registered %v):\n%s", name, cc.IsRegistered(name), first.out.String())
	}
	if took, code := first.stop(grace); code != 0 {
		t.Errorf("exit code %d %v after SIGTERM:\n%s", code, took, first.out.String())
	}
	if !cc.IsRegistered(name) {
		t.Fatalf("on_exit keep: %s is no longer registered after the container stopped", name)
	}

	// The next image version adopts what the first left, and removes it
	// when told to.
	second, _ := start(v2, "--on-exit=remove")
	addr = second.serving()
	if !second.logged("adopted") || second.logged("loaded") {
		t.Errorf("the new image should adopt %s, not load it:\n%s", name, second.out.String())
	}
	if info := buildInfo.FindString(scrape(t, addr)); !strings.Contains(info, `version="`+testVersion+`-2"`) {
		t.Errorf("mptcp_cc_build_info of the new image: %q", info)
	}
	if _, code := second.stop(grace); code != 0 {
		t.Errorf("exit code %d after SIGTERM with on_exit remove:\n%s", code, second.out.String())
	}
	if cc.IsRegistered(name) {
		t.Errorf("on_exit remove left %s registered:\n%s", name, second.out.String())
	}
}

// seccompWithBPF writes the container runtime's default seccomp profile
// (containers-common's, which podman uses) with one rule more: bpf(2) and
// perf_event_open(2) allowed to a process with CAP_BPF and CAP_PERFMON,
// as newer runtimes' defaults do. Debian 12's allows them only with
// CAP_SYS_ADMIN, so the agent's first map fails with EPERM (measured:
// "map create: operation not permitted").
func seccompWithBPF(t *testing.T) string {
	t.Helper()
	const def = "/usr/share/containers/seccomp.json"
	b, err := os.ReadFile(def)
	if err != nil {
		t.Fatalf("the runtime's default seccomp profile: %v (Debian package containers-common, a dependency of podman)", err)
	}
	var prof map[string]any
	if err := json.Unmarshal(b, &prof); err != nil {
		t.Fatalf("%s: %v", def, err)
	}
	// Its rule that answers EPERM to these calls without CAP_SYS_ADMIN
	// loses them (a process without CAP_BPF then gets the profile's
	// default answer), and a rule allows them with CAP_BPF and
	// CAP_PERFMON: two rules for one call would conflict.
	var calls []any
	for _, c := range prof["syscalls"].([]any) {
		rule := c.(map[string]any)
		if rule["action"] != "SCMP_ACT_ALLOW" {
			var names []any
			for _, n := range rule["names"].([]any) {
				if n != "bpf" && n != "perf_event_open" {
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				continue
			}
			rule["names"] = names
		}
		calls = append(calls, rule)
	}
	prof["syscalls"] = append(calls,
		map[string]any{"names": []string{"bpf"}, "action": "SCMP_ACT_ALLOW", "includes": map[string]any{"caps": []string{"CAP_BPF"}}},
		map[string]any{"names": []string{"perf_event_open"}, "action": "SCMP_ACT_ALLOW", "includes": map[string]any{"caps": []string{"CAP_PERFMON"}}})
	out, err := json.Marshal(prof)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "seccomp.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
