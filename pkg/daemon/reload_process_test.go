// SPDX-License-Identifier: Apache-2.0

package daemon_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/policy"
)

// pinnedLinkID is the kernel's id of a pinned BPF link: the same id after
// a reload means the link was not replaced.
func pinnedLinkID(t *testing.T, pin string) uint32 {
	t.Helper()
	l, err := link.LoadPinnedLink(pin, nil)
	if err != nil {
		t.Fatalf("opening %s: %v", pin, err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		t.Fatal(err)
	}
	return uint32(info.ID)
}

// waitMetric waits until a scrape contains line.
func waitMetric(t *testing.T, url, line string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(servetest.Get(t, url), line); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics did not show %q within 30 s", line)
		}
	}
}

// kernelState is what the test compares before and after a reload.
type kernelState struct {
	algos    map[string]string // name -> algo and parameters
	links    map[string]uint32 // name -> struct_ops link id
	polLinks []uint32          // the policy programs' cgroup link ids
	rules    map[string]uint32 // "cc dst port" -> rule id
}

func readKernelState(t *testing.T, root, proot, cg string) kernelState {
	t.Helper()
	s := kernelState{algos: map[string]string{}, links: map[string]uint32{}, rules: map[string]uint32{}}
	l, err := cc.List(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range l {
		if !a.Registered {
			t.Errorf("%s pinned but not registered", a.Name)
		}
		s.algos[a.Name] = fmt.Sprintf("%s %+v", a.Algo, a.Params)
		s.links[a.Name] = pinnedLinkID(t, filepath.Join(a.PinDir, "link"))
	}
	pins, _ := filepath.Glob(filepath.Join(proot, "*", "link"))
	for _, p := range pins {
		s.polLinks = append(s.polLinks, pinnedLinkID(t, p))
	}
	atts, err := policy.List(proot)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range atts {
		if a.Cgroup != cg {
			t.Errorf("a policy on %s, which the test did not configure", a.Cgroup)
		}
		for _, r := range a.Rules {
			s.rules[fmt.Sprintf("%s %v %d", r.CC, r.Dst, r.DstPort)] = r.ID
		}
	}
	return s
}

func (s kernelState) names() string {
	var n []string
	for k := range s.algos {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, " ")
}

// scraper scrapes the metrics without pause until stopped and counts the
// scrapes that did not answer 200.
type scraper struct {
	ok, failed atomic.Int64
	slowest    atomic.Int64 // ns
	stop       chan struct{}
	wg         sync.WaitGroup
	firstErr   atomic.Value
}

func scrapeConstantly(url string) *scraper {
	s := &scraper{stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c := &http.Client{Timeout: 10 * time.Second}
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			t0 := time.Now()
			resp, err := c.Get(url)
			if d := int64(time.Since(t0)); d > s.slowest.Load() {
				s.slowest.Store(d)
			}
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("%s", resp.Status)
				}
			}
			if err != nil {
				s.failed.Add(1)
				s.firstErr.CompareAndSwap(nil, err.Error())
				continue
			}
			s.ok.Add(1)
		}
	}()
	return s
}

func (s *scraper) end() (ok, failed int64, firstErr any) {
	close(s.stop)
	s.wg.Wait()
	return s.ok.Load(), s.failed.Load(), s.firstErr.Load()
}

// SIGHUP applies the difference to a running daemon: a new algorithm and
// rule appear, a dropped algorithm and its rule go, changed parameters are
// set in place, a name given to another algorithm is replaced; what did not
// change keeps its links and rule ids; the metrics answer all along. An
// invalid file, or one naming a missing cgroup, is refused with the
// problem logged and nothing changed. A new metrics address is served and
// the old one closed.
func TestServeReload(t *testing.T) {
	root := testkernel.PinRoot(t)
	proot := root + "-policy"
	cg := testCgroup(t, proot)
	sfx := testenv.Suffix()
	kept, dropped, added, tuned, renamed := "t_k"+sfx, "t_d"+sfx, "t_a"+sfx, "t_t"+sfx, "t_r"+sfx
	testkernel.UnloadAtCleanup(t, root, kept, dropped, added, tuned, renamed)

	first := fmt.Sprintf(`
bpffs: %[1]s
on_exit: remove
algorithms:
  - {algo: olia, name: %[2]s}
  - {algo: lia, name: %[3]s}
  - {algo: rsf, name: %[4]s, rsf_target: 10ms}
  - {algo: lia, name: %[5]s}
policies:
  - {cgroup: %[6]s, cc: %[2]s, dst: 192.0.2.0/24}
  - {cgroup: %[6]s, cc: %[3]s, dst_port: 80}
metrics: {listen_address: "127.0.0.1:0"}
events: {enabled: false}
`, root, kept, dropped, tuned, renamed, cg)
	d := startDaemon(t, first)
	file := d.Cmd.Args[3]
	url := d.Ready()
	before := readKernelState(t, root, proot, cg)
	if before.names() != strings.Join(sortedStrings(dropped, kept, renamed, tuned), " ") || len(before.rules) != 2 || len(before.polLinks) != 1 {
		t.Fatalf("after the start: %+v\n%s", before, d.Logs())
	}
	body := servetest.Get(t, url)
	for _, want := range []string{`mptcp_cc_config_reloads_total{result="success"} 0`, `mptcp_cc_config_reloads_total{result="failure"} 0`, "mptcp_cc_config_last_reload_successful 1"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics at start lacks %q", want)
		}
	}

	// A good file: one algorithm and one rule added, one of each dropped,
	// parameters changed, a name moved to another algorithm.
	second := fmt.Sprintf(`
bpffs: %[1]s
on_exit: remove
algorithms:
  - {algo: olia, name: %[2]s}
  - {algo: balia, name: %[3]s}
  - {algo: rsf, name: %[4]s, rsf_target: 25ms, lisa: true}
  - {algo: olia, name: %[5]s}
policies:
  - {cgroup: %[6]s, cc: %[2]s, dst: 192.0.2.0/24}
  - {cgroup: %[6]s, algo: balia, dst_port: 443}
metrics: {listen_address: "127.0.0.1:0"}
events: {enabled: false}
`, root, kept, added, tuned, renamed, cg)
	if err := os.WriteFile(file, []byte(second), 0o600); err != nil {
		t.Fatal(err)
	}
	sc := scrapeConstantly(url)
	time.Sleep(100 * time.Millisecond)
	reloadStart := time.Now()
	okBefore := sc.ok.Load()
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.WaitLog("configuration reloaded", 1)
	took, during := time.Since(reloadStart), sc.ok.Load()-okBefore
	time.Sleep(100 * time.Millisecond)
	ok, failed, firstErr := sc.end()
	t.Logf("reload took %v (SIGHUP to the log line); %d scrapes answered during it, %d in all, %d failed, the slowest in %v",
		took.Round(time.Millisecond), during, ok, failed, time.Duration(sc.slowest.Load()).Round(time.Millisecond))
	if failed != 0 || during == 0 {
		t.Errorf("scrapes across the reload: %d ok during it, %d failed (first: %v)", during, failed, firstErr)
	}
	// A scrape that caught a pin directory half made would have lost every
	// algorithm's series and logged this.
	if strings.Contains(d.Logs(), "level=ERROR") || strings.Contains(d.Logs(), "reading the BPF maps") {
		t.Errorf("errors logged, or a scrape failed to read the maps:\n%s", d.Logs())
	}

	after := readKernelState(t, root, proot, cg)
	if got, want := after.names(), strings.Join(sortedStrings(added, kept, renamed, tuned), " "); got != want {
		t.Errorf("loaded after the reload: %s, want %s", got, want)
	}
	if cc.IsRegistered(dropped) {
		t.Errorf("%s, dropped from the file, is still registered", dropped)
	}
	for _, n := range []string{kept, tuned} {
		if after.links[n] != before.links[n] {
			t.Errorf("%s: link %d became %d; it should not have been touched", n, before.links[n], after.links[n])
		}
	}
	if after.algos[kept] != before.algos[kept] {
		t.Errorf("%s changed: %s -> %s", kept, before.algos[kept], after.algos[kept])
	}
	if want := fmt.Sprintf("rsf %+v", cc.Params{LISA: true, RSFTarget: 25 * time.Millisecond}); after.algos[tuned] != want {
		t.Errorf("%s: %s, want %s (parameters updated in place)", tuned, after.algos[tuned], want)
	}
	if !strings.HasPrefix(after.algos[renamed], "olia ") || after.links[renamed] == before.links[renamed] {
		t.Errorf("%s: %s with link %d (was %d): want olia, loaded afresh", renamed, after.algos[renamed], after.links[renamed], before.links[renamed])
	}
	keptRule := fmt.Sprintf("%s 192.0.2.0/24 0", kept)
	if len(after.rules) != 2 || after.rules[keptRule] != before.rules[keptRule] || after.rules[fmt.Sprintf("%s invalid Prefix 443", added)] == 0 {
		t.Errorf("rules: %v (before: %v)", after.rules, before.rules)
	}
	if fmt.Sprint(after.polLinks) != fmt.Sprint(before.polLinks) {
		t.Errorf("the policy program's cgroup link changed: %v -> %v", before.polLinks, after.polLinks)
	}
	body = servetest.Get(t, url)
	for _, want := range []string{
		`mptcp_cc_config_reloads_total{result="success"} 1`, "mptcp_cc_config_last_reload_successful 1",
		fmt.Sprintf(`mptcp_cc_algorithm_info{cc="%s",algo="balia"`, added),
		fmt.Sprintf(`mptcp_cc_policy_rule_info{cc="%s",cgroup="%s",dst="any",dst_port="443",tcp="false"} 1`, added, cg),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics after the reload lacks %q", want)
		}
	}
	if strings.Contains(body, dropped) {
		t.Errorf("/metrics still names %s", dropped)
	}

	// Bad files: refused with the problem named, nothing changed.
	bad := []struct{ config, want string }{
		{strings.Replace(second, "algo: balia", "algo: cubic2", 1), `config.yaml:6: algorithms[1].algo: unknown algorithm \"cubic2\": choose one of balia, lia, olia, rsf`},
		{strings.Replace(second, "algo: balia, dst_port", "algo: balia, dst_prot", 1), "config.yaml:11: policies[1].dst_prot: unknown field"},
		{strings.ReplaceAll(second, cg, cg+"-missing"), "policies[0].cgroup: cgroup " + cg + "-missing does not exist"},
	}
	for i, b := range bad {
		if err := os.WriteFile(file, []byte(b.config), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		// A refusal logs a line per problem: count the reloads instead.
		waitMetric(t, url, fmt.Sprintf(`mptcp_cc_config_reloads_total{result="failure"} %d`, i+1))
		if !strings.Contains(d.Logs(), b.want) {
			t.Errorf("the refusal does not name the problem %q:\n%s", b.want, servetest.Lines(d.Logs(), "refused"))
		}
		if now := readKernelState(t, root, proot, cg); fmt.Sprint(now) != fmt.Sprint(after) {
			t.Errorf("a refused reload changed the kernel:\n%+v\nwas\n%+v", now, after)
		}
	}
	body = servetest.Get(t, url)
	for _, want := range []string{`mptcp_cc_config_reloads_total{result="success"} 1`, fmt.Sprintf(`mptcp_cc_config_reloads_total{result="failure"} %d`, len(bad)), "mptcp_cc_config_last_reload_successful 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics after refused reloads lacks %q", want)
		}
	}

	// A new metrics address: served from the reload on, the old one closed.
	if err := os.WriteFile(file, []byte(strings.Replace(second, `"127.0.0.1:0"`, `"localhost:0"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.WaitLog("configuration reloaded", 2)
	newURL := d.Ready()
	if newURL == url {
		t.Fatalf("the address did not change: %s", newURL)
	}
	if body := servetest.Get(t, newURL); !strings.Contains(body, `mptcp_cc_config_reloads_total{result="success"} 2`) {
		t.Errorf("the new address does not serve the metrics:\n%s", servetest.Lines(body, "reload"))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := http.Get(url); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old address %s still answers", url)
		}
	}

	// on_exit remove takes out what the reloaded configuration names.
	if code := d.Stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, d.Logs())
	}
	if testing.Verbose() {
		t.Logf("the daemon's log:\n%s", d.Logs())
	}
	for _, n := range []string{kept, added, tuned, renamed} {
		if cc.IsRegistered(n) {
			t.Errorf("%s registered after on_exit remove", n)
		}
	}
	if atts, err := policy.List(proot); err != nil || len(atts) != 0 {
		t.Errorf("policies after on_exit remove: %+v %v", atts, err)
	}
}

func sortedStrings(s ...string) []string {
	sort.Strings(s)
	return s
}
