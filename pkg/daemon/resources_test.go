// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// The order of the kinds is the daemon's one statement of what depends on
// what: a rule names an algorithm, a namespace a scheduler.
func TestResourceOrder(t *testing.T) {
	var names []string
	for _, r := range resources {
		names = append(names, r.name)
	}
	if got, want := strings.Join(names, " "), "algorithms policies schedulers netns_schedulers"; got != want {
		t.Errorf("resources in the order %s, want %s", got, want)
	}
}

// recorder is a kind of resource that records each call, failing the ones
// in fail.
type recorder struct {
	calls *[]string
	fail  map[string]bool
}

func (rec recorder) resource(name string) resource {
	do := func(op string) error {
		*rec.calls = append(*rec.calls, op+" "+name)
		if rec.fail[op+" "+name] {
			return errors.New("injected failure of " + op + " " + name)
		}
		return nil
	}
	return resource{
		name:  name,
		check: func(*running, *target) error { return do("check") },
		setUp: func(*running, *target, *state) error { return do("setUp") },
		undo:  func(*running, Config, *state) { _ = do("undo") },
		plan: func(*reloadPlan, *target, *target) ([]string, []error) {
			if err := do("plan"); err != nil {
				return nil, []error{err}
			}
			return []string{"change " + name}, nil
		},
		reload: func(*running, *target, reloadPlan, *state, *undoStack) error { return do("reload") },
		drop:   func(*running, reloadPlan) error { return do("drop") },
		remove: func(*running, Config) error { return do("remove") },
	}
}

// Every step goes through the kinds in their order, or in the reverse
// order to take them down; a failed start undoes the kinds it reached,
// the failed one included, last first; removals go on past a failure.
func TestResourceSteps(t *testing.T) {
	var calls []string
	rec := recorder{calls: &calls, fail: map[string]bool{"setUp c": true, "drop b": true, "remove c": true}}
	saved := resources
	t.Cleanup(func() { resources = saved })
	resources = []resource{rec.resource("a"), rec.resource("b"), rec.resource("c"), rec.resource("d")}
	r := &running{log: slog.New(slog.DiscardHandler)}
	step := func(name string, f func() error, wantErr string, want ...string) {
		t.Helper()
		calls = nil
		err := f()
		if wantErr == "" && err != nil || wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("%s: error %v, want %q", name, err, wantErr)
		}
		if !slices.Equal(calls, want) {
			t.Errorf("%s: calls %q, want %q", name, calls, want)
		}
	}
	step("check", func() error { _, err := r.checkAll(Config{}); return err }, "",
		"check a", "check b", "check c", "check d")
	step("start", func() error { return r.setUpAll(&target{}, newState()) }, "injected failure of setUp c",
		"setUp a", "setUp b", "setUp c", "undo c", "undo b", "undo a")
	var p reloadPlan
	step("plan", func() error { return errors.Join(planAll(&p, &target{}, &target{})...) }, "",
		"plan a", "plan b", "plan c", "plan d")
	if got := strings.Join(p.changes, ", "); got != "change a, change b, change c, change d" {
		t.Errorf("plan changes: %s", got)
	}
	step("reload", func() error { return r.reloadAll(&target{}, p, newState(), &undoStack{}) }, "",
		"reload a", "reload b", "reload c", "reload d")
	step("drop", func() error { return r.dropAll(p) }, "injected failure of drop b",
		"drop d", "drop c", "drop b", "drop a")
	step("on_exit remove", func() error { return r.removeAll(Config{}) }, "on_exit remove: injected failure of remove c",
		"remove d", "remove c", "remove b", "remove a")
}
