// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

// podScript makes the process what the kubelet makes the DaemonSet's
// container, as far as the daemon can tell: its own mount namespace (the
// caller runs it under `unshare --mount --propagation private`), a
// read-only root, the host's cgroup tree read-only, a container's usual
// 64 KiB RLIMIT_MEMLOCK, no_new_privs (allowPrivilegeEscalation: false) and
// exactly the capabilities of $1. uid 0 keeps exactly the bounding set
// across exec, as in the container.
const podScript = `set -e
caps=$1 cgroup=$2; shift 2
mount -o remount,bind,ro /
mount --bind "$cgroup" "$cgroup"
mount -o remount,bind,ro "$cgroup"
exec prlimit --memlock=65536 -- setpriv --no-new-privs --inh-caps=-all --bounding-set=-all,"$caps" -- "$@"`

// pod is one run of the daemon as the DaemonSet's container.
type pod struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  testenv.SyncBuffer
	done chan struct{}
}

// records returns the daemon's log records (the DaemonSet asks for JSON).
func (p *pod) records() []map[string]any {
	var recs []map[string]any
	for _, l := range strings.Split(p.out.String(), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(l), &r) == nil {
			recs = append(recs, r)
		}
	}
	return recs
}

func (p *pod) logged(msg string) bool {
	return slices.ContainsFunc(p.records(), func(r map[string]any) bool { return r["msg"] == msg })
}

// serving waits for the daemon's "serving metrics" record and returns the
// address it names.
func (p *pod) serving() string {
	p.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		for _, r := range p.records() {
			if a, ok := r["address"].(string); ok && r["msg"] == "serving metrics" {
				return strings.TrimSuffix(a, "/metrics")
			}
		}
		select {
		case <-p.done:
			p.t.Fatalf("the pod's daemon exited before serving (%v):\n%s", p.cmd.ProcessState, p.out.String())
		case <-deadline:
			p.t.Fatalf("the pod's daemon did not serve within 30 s:\n%s", p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop is the kubelet stopping the container: SIGTERM, then SIGKILL after
// the grace period. It returns how long the daemon took and its exit code.
func (p *pod) stop(grace time.Duration) (time.Duration, int) {
	p.t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("the daemon did not stop within the grace period (%v): the kubelet would kill it:\n%s", grace, p.out.String())
	}
	return time.Since(start), p.cmd.ProcessState.ExitCode()
}

var buildInfo = regexp.MustCompile(`(?m)^mptcp_cc_build_info\{.*$`)

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get(addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: %s %v", addr, resp.Status, err)
	}
	return string(b)
}

// procStatus returns fields of /proc/PID/status.
func procStatus(pid int, fields ...string) (map[string]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(l, ":")
		if slices.Contains(fields, k) {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

// capMask is the capability set of these Kubernetes capability names.
func capMask(t *testing.T, caps []corev1.Capability) uint64 {
	t.Helper()
	bits := map[corev1.Capability]uint{"BPF": unix.CAP_BPF, "PERFMON": unix.CAP_PERFMON, "NET_ADMIN": unix.CAP_NET_ADMIN,
		"SYS_ADMIN": unix.CAP_SYS_ADMIN, "SYS_RESOURCE": unix.CAP_SYS_RESOURCE}
	var m uint64
	for _, c := range caps {
		b, ok := bits[c]
		if !ok {
			t.Fatalf("capability %s: add its bit to capMask", c)
		}
		m |= 1 << b
	}
	return m
}

// The DaemonSet's container, without a cluster: the daemon with the
// container's args, exactly the container's capabilities and the pod's
// restrictions (podScript) loads a congestion control, attaches a policy,
// follows the path manager's events and answers its probe; stopped as the
// kubelet stops it, it leaves both in force in the host's bpffs; and the
// next pod, with the same restrictions, adopts them without a change.
func TestPodRunsWithOnlyItsCapabilities(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range []string{"unshare", "setpriv", "prlimit", "mount", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux, essential on Debian) is missing: %v", tool, err)
		}
	}
	b := load(t)
	c := container(t, b)
	grace := time.Duration(*b.ds.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	var caps []string
	for _, cp := range c.SecurityContext.Capabilities.Add {
		caps = append(caps, "+"+strings.ToLower(string(cp)))
	}
	wantEff := capMask(t, c.SecurityContext.Capabilities.Add)

	// A private bpffs stands in for the host's /sys/fs/bpf: the pod's
	// mount namespace sees the same instance, as the hostPath mount does,
	// and unmounting it at cleanup drops whatever a failure left pinned.
	root := testkernel.PinRoot(t)
	proot := root + "-policy"
	cgroups, err := policy.CgroupMount()
	if err != nil {
		t.Fatalf("the DaemonSet mounts the host's cgroup v2 tree; this host has none: %v", err)
	}
	cg := filepath.Join(cgroups, testenv.Unique("mptcp-cc-k8s-"))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(cg) })
	name := testenv.Unique("t_k8s_")
	testkernel.UnloadAtCleanup(t, root, name)
	t.Cleanup(func() { _ = policy.Detach(cg, proot) })

	file := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf("bpffs: %s\npolicy_bpffs: %s\non_exit: keep\nalgorithms: [{algo: lia, name: %s}]\npolicies: [{cgroup: %s, cc: %s}]\n", root, proot, name, cg, name)
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	args, err := expandArgs(c, map[string]string{"status.podIP": "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if strings.HasPrefix(a, "--config=") {
			args[i] = "--config=" + file
		}
	}
	// Loopback, on a port of the kernel's choosing: the manifest's fixed
	// port may be taken by a daemon already running here.
	args = append(args, "--web.listen-address=127.0.0.1:0")
	bin := mptcpCC(t)
	start := func(extra ...string) *pod {
		p := &pod{t: t, done: make(chan struct{})}
		argv := append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", podScript, "sh",
			strings.Join(caps, ","), cgroups, bin}, append(args, extra...)...)
		p.cmd = exec.Command("unshare", argv...)
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			select {
			case <-p.done:
			default:
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		})
		return p
	}
	rules := func() int {
		atts, err := policy.List(proot)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range atts {
			if a.Cgroup == cg {
				n += len(a.Rules)
			}
		}
		return n
	}

	began := time.Now()
	first := start()
	addr := first.serving()
	t.Logf("first pod: serving %v after its start", time.Since(began).Round(time.Millisecond))
	st, err := procStatus(first.cmd.Process.Pid, "CapEff", "CapBnd", "NoNewPrivs", "VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"CapEff", "CapBnd"} {
		if v, err := strconv.ParseUint(st[f], 16, 64); err != nil || v != wantEff {
			t.Errorf("the daemon's %s is %s, want %016x (the DaemonSet's capabilities): the emulation is not the pod", f, st[f], wantEff)
		}
	}
	if st["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs %s: the emulation is not the pod", st["NoNewPrivs"])
	}
	t.Logf("first pod: RSS %s", st["VmRSS"])
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		resp, err := http.Get(addr + probe.HTTPGet.Path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("probe %s: %s", probe.HTTPGet.Path, resp.Status)
		}
	}
	// What tells an operator which nodes a rollout has reached.
	if info := buildInfo.FindString(scrape(t, addr)); !strings.Contains(info, `version="`+testVersion+`"`) {
		t.Errorf("mptcp_cc_build_info does not carry the stamped version %s: %q", testVersion, info)
	}
	if !cc.IsRegistered(name) || rules() != 1 {
		t.Fatalf("with the DaemonSet's capabilities: registered %v, policy rules %d; want true, 1:\n%s", cc.IsRegistered(name), rules(), first.out.String())
	}
	if first.logged("not following mptcp_pm events") {
		t.Errorf("the path manager's events need a capability the DaemonSet does not give:\n%s", first.out.String())
	}

	took, code := first.stop(grace)
	t.Logf("first pod: stopped %v after SIGTERM (grace period %v)", took.Round(time.Millisecond), grace)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM:\n%s", code, first.out.String())
	}
	// What a rolling update relies on: between the pods, everything stays.
	loaded, err := cc.List(root)
	if err != nil || !slices.ContainsFunc(loaded, func(l cc.Loaded) bool { return l.Name == name && l.Registered }) || rules() != 1 {
		t.Fatalf("after the pod stopped: pinned %+v (%v), policy rules %d; want %s pinned and registered, 1 rule", loaded, err, rules(), name)
	}

	// The next pod adopts; with on_exit remove it then leaves nothing.
	second := start("--on-exit=remove")
	second.serving()
	if !second.logged("adopted") || !second.logged("policy adopted") || second.logged("loaded") || second.logged("policy attached") {
		t.Errorf("the next pod should adopt both, loading and attaching nothing:\n%s", second.out.String())
	}
	if _, code := second.stop(grace); code != 0 {
		t.Errorf("exit code %d after SIGTERM with on_exit remove:\n%s", code, second.out.String())
	}
	if cc.IsRegistered(name) || rules() != 0 {
		t.Errorf("on_exit remove left: registered %v, policy rules %d:\n%s", cc.IsRegistered(name), rules(), second.out.String())
	}
}
