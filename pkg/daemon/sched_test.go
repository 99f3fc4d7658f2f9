// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// fakeSched records what the daemon asks of pkg/sched (this machine has no
// scheduler hook, so the real one loads nothing).
type fakeSched struct {
	mu       sync.Mutex
	loaded   map[string]sched.Loaded
	netns    map[string]string // a namespace's scheduler; absent: it does not exist
	calls    []string
	failLoad string // Load of this name fails
	failUse  string // Use in this namespace fails
}

func newFakeSched() *fakeSched {
	return &fakeSched{loaded: map[string]sched.Loaded{}, netns: map[string]string{"": "default", "lab": "default"}}
}

func (f *fakeSched) Load(a sched.Algorithm, o sched.Options) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("load %s %s %+v", o.Name, a.Name, o.Params))
	if o.Name == f.failLoad {
		return errors.New("injected failure")
	}
	if _, ok := f.loaded[o.Name]; ok {
		return sched.ErrAlreadyLoaded
	}
	f.loaded[o.Name] = sched.Loaded{Name: o.Name, Algorithm: a.Name, Params: o.Params, Registered: true, Build: structops.ThisBuild(), BuildRecorded: true}
	return nil
}

func (f *fakeSched) Upgrade(name, root string) (sched.Upgraded, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "upgrade "+name)
	l, ok := f.loaded[name]
	if !ok {
		return sched.Upgraded{}, fmt.Errorf("%s is %w", name, sched.ErrNotLoaded)
	}
	u := sched.Upgraded{Name: name, Algo: l.Algorithm, From: l.Build, Recorded: l.BuildRecorded, To: structops.ThisBuild()}
	u.To.Generation = l.Build.Generation + 1
	l.Build, l.BuildRecorded = u.To, true
	f.loaded[name] = l
	return u, nil
}

func (f *fakeSched) Unload(name, root string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "unload "+name)
	if _, ok := f.loaded[name]; !ok {
		return fmt.Errorf("%s is %w", name, sched.ErrNotLoaded)
	}
	delete(f.loaded, name)
	return nil
}

func (f *fakeSched) List(root string) ([]sched.Loaded, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sched.Loaded
	for _, l := range f.loaded {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *fakeSched) Available() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []string{"default"}
	for n, l := range f.loaded {
		if l.Registered {
			out = append(out, n)
		}
	}
	sort.Strings(out[1:])
	return out, nil
}

func (f *fakeSched) Use(name, ns string) error {
	avail, _ := f.Available()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("use %s %s", nsName(ns), name))
	if _, ok := f.netns[ns]; !ok {
		return fmt.Errorf("network namespace %q does not exist", ns)
	}
	if f.failUse != "" && ns == f.failUse && name != "default" {
		return errors.New("injected failure")
	}
	if !slices.Contains(avail, name) {
		return fmt.Errorf("scheduler %q is not registered", name)
	}
	f.netns[ns] = name
	return nil
}

func (f *fakeSched) Current(ns string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.netns[ns]
	if !ok {
		return "", fmt.Errorf("network namespace %q does not exist (`ip netns list` shows those that do)", ns)
	}
	return cur, nil
}

func (f *fakeSched) log() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := strings.Join(f.calls, "\n")
	f.calls = nil
	return s
}

func (f *fakeSched) state() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s []string
	for _, l := range f.loaded {
		s = append(s, fmt.Sprintf("%s=%s%+v", l.Name, l.Algorithm, l.Params))
	}
	for ns, n := range f.netns {
		s = append(s, nsName(ns)+":"+n)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// schedConfig loads minrtt twice (the second with tunables and the trace)
// and gives lab and the daemon's own namespace one each; nothing else.
func schedConfig(t *testing.T, onExit OnExit) Config {
	zero := 0
	off := false
	return Config{
		BPFFS: filepath.Join(t.TempDir(), "cc"), OnExit: onExit,
		Schedulers: []Scheduler{{Algo: "minrtt"}, {Algo: "minrtt", Name: "m2", Trace: true, Args: []uint32{3}}},
		NetnsSchedulers: []NetnsScheduler{
			{Netns: "lab", Scheduler: "minrtt"},
			{Scheduler: "m2"},
		},
		Metrics: Metrics{ListenAddress: "127.0.0.1:0", MaxSubflows: &zero},
		Events:  Events{Enabled: &off},
	}
}

func runSched(t *testing.T, cfg Config, fs *fakeSched, reload <-chan struct{}, next func() (Config, error), logs *testenv.SyncBuffer) (stop func() error, err error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	log := quietLog()
	if logs != nil {
		log = slog.New(slog.NewTextHandler(logs, nil))
	}
	go func() {
		done <- Run(ctx, cfg, Options{Logger: log, Policy: newFake(), Sched: fs, Ready: func(net.Addr) { close(ready) }, Reload: reload, ReadConfig: next})
	}()
	select {
	case <-ready:
		return func() error { cancel(); return <-done }, nil
	case err := <-done:
		cancel()
		return nil, err
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("Run neither ready nor failed in 30 s")
	}
	return nil, nil
}

// Schedulers are loaded, then the namespaces get theirs; a restart adopts
// all of it without a call; on_exit remove gives the namespaces the
// default back, then unloads the schedulers.
func TestRunSchedulers(t *testing.T) {
	testenv.RequireRoot(t)
	fs := newFakeSched()
	stop, err := runSched(t, schedConfig(t, OnExitKeep), fs, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "load minrtt minrtt {Trace:false Args:[0 0 0 0 0 0]}\nload m2 minrtt {Trace:true Args:[3 0 0 0 0 0]}\nuse lab minrtt\nuse (own) m2"
	if got := fs.log(); got != want {
		t.Fatalf("calls:\n%s\nwant:\n%s", got, want)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	before := fs.state()
	if fs.log() != "" || !strings.Contains(before, "lab:minrtt") {
		t.Fatalf("on_exit keep changed something: %s", before)
	}

	stop, err = runSched(t, schedConfig(t, OnExitRemove), fs, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.log(); got != "" {
		t.Fatalf("a restart did:\n%s", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	want = "use lab default\nuse (own) default\nunload minrtt\nunload m2"
	if got := fs.log(); got != want {
		t.Errorf("on_exit remove:\n%s\nwant:\n%s", got, want)
	}
	if got := fs.state(); got != "(own):default lab:default" {
		t.Errorf("after on_exit remove: %s", got)
	}
}

// Adoption: other parameters under the name mean unload, then load; a
// stale pin is removed and loaded afresh; another scheduler under the
// name refuses the start.
func TestRunSchedulerAdoption(t *testing.T) {
	testenv.RequireRoot(t)
	fs := newFakeSched()
	fs.loaded["minrtt"] = sched.Loaded{Name: "minrtt", Algorithm: "minrtt", Params: sched.Params{Args: [6]uint32{9}}, Registered: true}
	fs.loaded["m2"] = sched.Loaded{Name: "m2", Algorithm: "minrtt", Params: sched.Params{Trace: true, Args: [6]uint32{3}}, Registered: false}
	stop, err := runSched(t, schedConfig(t, OnExitKeep), fs, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = stop()
	want := "unload minrtt\nload minrtt minrtt {Trace:false Args:[0 0 0 0 0 0]}\nunload m2\nload m2 minrtt {Trace:true Args:[3 0 0 0 0 0]}\nuse lab minrtt\nuse (own) m2"
	if got := fs.log(); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}

	fs = newFakeSched()
	fs.loaded["m2"] = sched.Loaded{Name: "m2", Algorithm: "rr", Registered: true}
	_, err = runSched(t, schedConfig(t, OnExitKeep), fs, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "schedulers[1]: m2 is already loaded as rr, the configuration wants minrtt: unload it first (`mptcp-cc sched unload m2`)") {
		t.Fatalf("err = %v", err)
	}
	if got := fs.log(); got != "load minrtt minrtt {Trace:false Args:[0 0 0 0 0 0]}\nunload minrtt" {
		t.Errorf("the failed start did not undo its load:\n%s", got)
	}
}

// A scheduler another build loaded, with the configured parameters: kept
// with a warning under adopt: keep, upgraded (sched.Upgrade) under adopt:
// upgrade; one of this build is adopted as it is either way.
func TestRunSchedulerAdoptsAnotherBuild(t *testing.T) {
	testenv.RequireRoot(t)
	for _, c := range []struct {
		adopt      Adopt
		calls, log string
	}{
		{AdoptKeep, "", "adopting a scheduler another build of mptcp-cc loaded"},
		{AdoptUpgrade, "upgrade minrtt\n", "scheduler upgraded; connections already open keep the previous build"},
	} {
		fs := newFakeSched()
		old := structops.Build{Version: "v0.0.9", Commit: "c0", ABI: "a"}
		fs.loaded["minrtt"] = sched.Loaded{Name: "minrtt", Algorithm: "minrtt", Registered: true, Build: old, BuildRecorded: true}
		fs.loaded["m2"] = sched.Loaded{Name: "m2", Algorithm: "minrtt", Params: sched.Params{Trace: true, Args: [6]uint32{3}}, Registered: true,
			Build: structops.ThisBuild(), BuildRecorded: true}
		cfg := schedConfig(t, OnExitKeep)
		cfg.Adopt = c.adopt
		var logs testenv.SyncBuffer
		stop, err := runSched(t, cfg, fs, nil, nil, &logs)
		if err != nil {
			t.Fatal(err)
		}
		_ = stop()
		if got, want := fs.log(), c.calls+"use lab minrtt\nuse (own) m2"; got != want {
			t.Errorf("adopt: %s: calls:\n%s\nwant:\n%s", c.adopt, got, want)
		}
		if !strings.Contains(logs.String(), c.log) || strings.Count(logs.String(), "another build") > 1 {
			t.Errorf("adopt: %s: want %q logged once, for minrtt alone:\n%s", c.adopt, c.log, logs.String())
		}
	}
}

// A failed start undoes what it did to the schedulers and the namespaces,
// and nothing it adopted; a namespace that does not exist or a scheduler
// nobody loads is refused before anything changes.
func TestRunSchedRollback(t *testing.T) {
	testenv.RequireRoot(t)
	fs := newFakeSched()
	fs.loaded["minrtt"] = sched.Loaded{Name: "minrtt", Algorithm: "minrtt", Registered: true}
	cfg := schedConfig(t, OnExitKeep)
	cfg.NetnsSchedulers = append(cfg.NetnsSchedulers, NetnsScheduler{Netns: "lab2", Scheduler: "minrtt"})
	fs.netns["lab2"] = "default"
	fs.failLoad = "m3"
	cfg.Schedulers = append(cfg.Schedulers, Scheduler{Algo: "minrtt", Name: "m3"})
	_, err := runSched(t, cfg, fs, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "schedulers[2]: loading minrtt as m3: injected failure") {
		t.Fatalf("err = %v", err)
	}
	if got := fs.log(); got != "load m2 minrtt {Trace:true Args:[3 0 0 0 0 0]}\nload m3 minrtt {Trace:false Args:[0 0 0 0 0 0]}\nunload m2" {
		t.Errorf("calls:\n%s", got)
	}
	if got := fs.state(); got != "(own):default lab2:default lab:default minrtt=minrtt{Trace:false Args:[0 0 0 0 0 0]}" {
		t.Errorf("after the rollback: %s", got)
	}

	// The last namespace fails at its turn: the others get back what
	// they had, the schedulers this run loaded are unloaded.
	fs = newFakeSched()
	fs.netns["lab2"] = "default"
	fs.failUse = "lab2"
	cfg = schedConfig(t, OnExitKeep)
	cfg.NetnsSchedulers = append(cfg.NetnsSchedulers, NetnsScheduler{Netns: "lab2", Scheduler: "minrtt"})
	_, err = runSched(t, cfg, fs, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "netns_schedulers[2]: injected failure") {
		t.Fatalf("err = %v", err)
	}
	if got := fs.state(); got != "(own):default lab2:default lab:default" {
		t.Errorf("after the rollback: %s", got)
	}

	// Refused before any change: a namespace that does not exist, a
	// scheduler neither loaded by the file nor registered.
	fs = newFakeSched()
	cfg = schedConfig(t, OnExitKeep)
	cfg.NetnsSchedulers = []NetnsScheduler{{Netns: "gone", Scheduler: "minrtt"}, {Netns: "lab", Scheduler: "nosuch"}}
	_, err = runSched(t, cfg, fs, nil, nil, nil)
	for _, want := range []string{`netns_schedulers[0].netns: network namespace "gone" does not exist`, `netns_schedulers[1].scheduler: "nosuch" is neither in the schedulers list nor registered (registered: default)`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	if got := fs.log(); got != "" {
		t.Errorf("the preflight let something happen:\n%s", got)
	}
}

// The schedulers' configuration: defaults, and bad input named by field
// and line with the fix.
func TestConfigSchedulers(t *testing.T) {
	c, err := ParseConfig([]byte(`
bpffs: /tmp/x/mptcp-cc
schedulers:
  - algo: minrtt
  - {algo: minrtt, name: fast, trace: true, args: [0, 2]}
netns_schedulers:
  - scheduler: fast
  - {netns: lab, scheduler: default}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Resolve()
	if r.SchedBPFFS != "/tmp/x/mptcp-cc-sched" || r.Schedulers[0].Name != "minrtt" || r.Schedulers[1].Name != "fast" {
		t.Errorf("resolved: %+v", r)
	}
	if p := r.Schedulers[1].Params(); p != (sched.Params{Trace: true, Args: [6]uint32{0, 2}}) {
		t.Errorf("params %+v", p)
	}
	if !slices.Equal(netnsList(r), []string{"", "lab"}) {
		t.Errorf("namespaces %v", netnsList(r))
	}

	names := strings.Join(sched.Names(), ", ")
	for _, c := range []struct{ name, in, want string }{
		{"unknown", "schedulers:\n  - algo: nope\n", `config:2: schedulers[0].algo: no such scheduler "nope": choose one of ` + names},
		{"missing algo", "schedulers:\n  - name: x\n", "config:2: schedulers[0].algo: missing: one of " + names},
		{"the kernel's name", "schedulers:\n  - {algo: minrtt, name: default}\n", `config:2: schedulers[0].name: "default" is the kernel's own scheduler`},
		{"bad name", "schedulers:\n  - algo: minrtt\n    name: Much_Too_Long_Name\n", "config:3: schedulers[0].name:"},
		{"duplicate", "schedulers:\n  - algo: minrtt\n  - algo: minrtt\n", `config:3: schedulers[1].name: "minrtt" is also the name of schedulers[0]`},
		{"too many args", "schedulers:\n  - {algo: minrtt, args: [1, 2, 3, 4, 5, 6, 7]}\n", "config:2: schedulers[0].args: 7 values: a scheduler has 6 tunables"},
		{"negative arg", "schedulers:\n  - {algo: minrtt, args: [-1]}\n", "schedulers[0].args[0]"},
		{"unknown field", "schedulers:\n  - {algo: minrtt, burst: 3}\n", `unknown field "burst"`},
		{"bad netns", "netns_schedulers:\n  - {netns: a/b, scheduler: default}\n", `config:2: netns_schedulers[0].netns: "a/b" is not a network namespace name`},
		{"netns twice", "netns_schedulers:\n  - {scheduler: default}\n  - {netns: \"\", scheduler: x}\n", "netns_schedulers[1].netns: netns_schedulers[0] already sets the scheduler of (own)"},
		{"no scheduler", "netns_schedulers:\n  - {netns: lab}\n", "config:2: netns_schedulers[0].scheduler: missing"},
		{"bad scheduler", "netns_schedulers:\n  - {netns: lab, scheduler: ../x}\n", `netns_schedulers[0].scheduler: "../x" is not a scheduler name`},
		{"relative root", "sched_bpffs: sched\n", `config:1: sched_bpffs: "sched" is not an absolute path`},
		{"root of the policies", "policy_bpffs: /sys/fs/bpf/mptcp-cc-sched\n", "sched_bpffs: /sys/fs/bpf/mptcp-cc-sched is also policy_bpffs"},
		{"root of the algorithms", "bpffs: /sys/fs/bpf/x\nsched_bpffs: /sys/fs/bpf/x/\n", "sched_bpffs: /sys/fs/bpf/x/ is also bpffs"},
	} {
		_, err := ParseConfig([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// planReload with schedulers: what does not change is not touched, other
// parameters or another scheduler replace, a dropped namespace gets the
// default back, and no namespace may keep a scheduler the file drops.
func TestPlanReloadSched(t *testing.T) {
	base := `
bpffs: /sys/fs/bpf/t
schedulers:
  - {algo: minrtt}
  - {algo: minrtt, name: m2}
  - {algo: minrtt, name: m3}
netns_schedulers:
  - {netns: lab, scheduler: minrtt}
  - {scheduler: m2}
`
	old, oldPols := resolved(t, base)
	for _, c := range []struct {
		name, new string
		want      []string
		err       string
	}{
		{"same", base, nil, ""},
		{"changes", `
bpffs: /sys/fs/bpf/t
schedulers:
  - {algo: minrtt}
  - {algo: minrtt, name: m2, trace: true}
  - {algo: minrtt, name: m4}
netns_schedulers:
  - {netns: lab, scheduler: m4}
  - {netns: lab2, scheduler: default}
`, []string{
			"load scheduler m4 (minrtt)",
			"replace scheduler m2: minrtt {Trace:false Args:[0 0 0 0 0 0]} -> minrtt {Trace:true Args:[0 0 0 0 0 0]} (unload, then load)",
			"unload scheduler m3",
			"set the scheduler of netns lab: m4",
			"set the scheduler of netns lab2: default",
			"give netns (own) the default scheduler back (was m2)",
		}, ""},
		{"root does not move", base + "sched_bpffs: /sys/fs/bpf/other\n", nil, "sched_bpffs: /sys/fs/bpf/t-sched is in force and the file now says /sys/fs/bpf/other"},
		{"namespace keeps a dropped scheduler", `
bpffs: /sys/fs/bpf/t
schedulers:
  - {algo: minrtt}
netns_schedulers:
  - {scheduler: m2}
`, nil, "netns_schedulers[0].scheduler: m2 is dropped from schedulers by this file and would be unloaded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, pols := resolved(t, c.new)
			plan, err := planReload(old, oldPols, cfg, pols)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := plan.actions(old, cfg); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("actions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if n := len(plan.sched.load) + len(plan.sched.replace) + len(plan.sched.keep); n != len(cfg.Schedulers) {
				t.Errorf("%d schedulers planned, the file has %d", n, len(cfg.Schedulers))
			}
		})
	}
}

// A reload applies the difference to the schedulers and namespaces; one
// that fails half-way gives back everything it changed.
func TestReloadSched(t *testing.T) {
	testenv.RequireRoot(t)
	fs := newFakeSched()
	fs.netns["lab2"] = "default"
	cfg := schedConfig(t, OnExitKeep)
	next := cfg
	next.Schedulers = []Scheduler{{Algo: "minrtt", Name: "minrtt"}, {Algo: "minrtt", Name: "m2"}, {Algo: "minrtt", Name: "m4"}}
	next.NetnsSchedulers = []NetnsScheduler{{Netns: "lab", Scheduler: "minrtt"}, {Netns: "lab2", Scheduler: "m4"}}
	var logs testenv.SyncBuffer
	reload := make(chan struct{}, 1)
	stop, err := runSched(t, cfg, fs, reload, func() (Config, error) { return next, nil }, &logs)
	if err != nil {
		t.Fatal(err)
	}
	fs.log()
	waitLogs := func(s string, n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), s) < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q logged:\n%s", s, logs.String())
			}
		}
	}

	// m2 loses its parameters (replaced), m4 is new, the own namespace is
	// dropped (default back), lab2 gets m4; minrtt and lab stay.
	reload <- struct{}{}
	waitLogs("configuration reloaded", 1)
	want := "unload m2\nload m2 minrtt {Trace:false Args:[0 0 0 0 0 0]}\nload m4 minrtt {Trace:false Args:[0 0 0 0 0 0]}\nuse lab2 m4\nuse (own) default"
	if got := fs.log(); got != want {
		t.Errorf("reload calls:\n%s\nwant:\n%s", got, want)
	}
	applied := fs.state()
	if applied != "(own):default lab2:m4 lab:minrtt m2=minrtt{Trace:false Args:[0 0 0 0 0 0]} m4=minrtt{Trace:false Args:[0 0 0 0 0 0]} minrtt=minrtt{Trace:false Args:[0 0 0 0 0 0]}" {
		t.Errorf("after the reload: %s", applied)
	}

	// A reload whose last load fails: m2 replaced back, lab given back.
	next.Schedulers = []Scheduler{{Algo: "minrtt", Name: "minrtt"}, {Algo: "minrtt", Name: "m2", Args: []uint32{5}}, {Algo: "minrtt", Name: "m4"}, {Algo: "minrtt", Name: "m5"}}
	next.NetnsSchedulers = []NetnsScheduler{{Netns: "lab", Scheduler: "m2"}, {Netns: "lab2", Scheduler: "m4"}}
	fs.failLoad = "m5"
	reload <- struct{}{}
	waitLogs("configuration reload refused", 1)
	if got := fs.state(); got != applied {
		t.Errorf("after the failed reload: %s\nwant, as before it: %s", got, applied)
	}
	if !strings.Contains(logs.String(), "schedulers[3]: loading minrtt as m5: injected failure") {
		t.Errorf("the refusal does not name the failure:\n%s", logs.String())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
