// SPDX-License-Identifier: Apache-2.0

package daemon

// The algorithms (congestion controls) as a resource: loaded or adopted at
// start, changed in place or replaced at a reload, unloaded when dropped
// or at on_exit remove.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

var algorithmResource = resource{
	name:  "algorithms",
	check: checkAlgorithms,
	setUp: func(r *running, t *target, st *state) error { return setUpAlgorithms(t.cfg, st, r.log) },
	undo:  undoAlgorithms,
	plan:  planAlgorithms,
	reload: func(r *running, t *target, p reloadPlan, st *state, undo *undoStack) error {
		return r.reloadAlgorithms(t.cfg, p, st, undo)
	},
	drop:   dropAlgorithms,
	remove: removeAlgorithms,
}

// checkAlgorithms checks that the pins of the algorithms can be read.
func checkAlgorithms(_ *running, t *target) error {
	if _, err := cc.List(t.cfg.BPFFS); err != nil {
		return fmt.Errorf("reading the algorithms pinned under %s: %w", t.cfg.BPFFS, err)
	}
	return nil
}

// setUpAlgorithms loads or adopts each configured algorithm
// (setUpAlgorithm).
func setUpAlgorithms(cfg Config, st *state, log *slog.Logger) error {
	byName, err := pinnedAlgorithms(cfg.BPFFS)
	if err != nil {
		return err
	}
	for i, a := range cfg.Algorithms {
		act, err := setUpAlgorithm(cfg.BPFFS, i, a, byName, cfg.Adopt, log, slog.LevelInfo)
		if err != nil {
			return err
		}
		st.algos[a.Name] = act
	}
	return nil
}

func pinnedAlgorithms(root string) (map[string]cc.Loaded, error) {
	loaded, err := cc.List(root)
	if err != nil {
		return nil, err
	}
	byName := map[string]cc.Loaded{}
	for _, l := range loaded {
		byName[l.Name] = l
	}
	return byName, nil
}

// setUpAlgorithm loads algorithms[i], or adopts it when a previous run (or
// `mptcp-cc load`) left it pinned: same algorithm, same parameters: nothing
// to do; other parameters: they are updated in place (running subflows see
// them at their next ACK, cc.SetParams); another algorithm under that name: an error.
// Pinned by another build of mptcp-cc, it is upgraded in place first when
// adopt is upgrade, and kept with a warning otherwise. Adoptions are logged
// at adopted (a reload adopts what it keeps, which is not news).
func setUpAlgorithm(root string, i int, a Algorithm, byName map[string]cc.Loaded, adopt Adopt, log *slog.Logger, adopted slog.Level) (action, error) {
	alg, err := cc.Lookup(a.Algo)
	if err != nil {
		return "", err
	}
	field := fmt.Sprintf("algorithms[%d]", i)
	if l, ok := byName[a.Name]; ok {
		if !l.Registered {
			log.Warn("stale pins (the kernel no longer lists it): removing them and loading afresh", "name", a.Name, "pins", l.PinDir)
			if err := cc.Unload(a.Name, root); err != nil {
				return "", fmt.Errorf("%s: removing the stale pins of %s: %w", field, a.Name, err)
			}
		} else {
			if l.Algo != a.Algo {
				return "", fmt.Errorf("%s: %s is already loaded as %s, the configuration wants %s: unload it first (`mptcp-cc unload --name %s`) or give the entry another name", field, a.Name, l.Algo, a.Algo, a.Name)
			}
			if !l.Current() {
				pinned := "an unrecorded build"
				if l.BuildRecorded {
					pinned = l.Build.Version
				}
				if adopt != AdoptUpgrade {
					log.Warn("adopting a registration another build of mptcp-cc loaded: new connections get the pinned build until `mptcp-cc upgrade` (or adopt: upgrade in the configuration)",
						"name", a.Name, "pinned", pinned, "this", cc.ThisBuild().Version)
				} else {
					u, err := cc.Upgrade(a.Name, root, false)
					if err != nil {
						return "", fmt.Errorf("%s: upgrading %s in place (adopt: upgrade): %w", field, a.Name, err)
					}
					log.Info("upgraded in place; connections already open keep the previous build", "name", a.Name, "from", pinned, "to", u.To.Version, "generation", u.To.Generation)
				}
			}
			if l.Params == a.Params() {
				log.Log(context.Background(), adopted, "adopted", "name", a.Name, "algo", a.Algo)
				return actAdopted, nil
			}
			if err := cc.SetParams(root, a.Name, a.Params()); err != nil {
				return "", fmt.Errorf("%s: updating the parameters of the loaded %s: %w", field, a.Name, err)
			}
			log.Info("adopted; parameters updated in place", "name", a.Name, "algo", a.Algo,
				"was", fmt.Sprintf("%+v", l.Params), "now", fmt.Sprintf("%+v", a.Params()))
			return actUpdated, nil
		}
	}
	if err := cc.Load(alg, cc.Options{Name: a.Name, PinRoot: root, Params: a.Params()}); err != nil {
		return "", fmt.Errorf("%s: loading %s as %s: %w", field, a.Algo, a.Name, err)
	}
	log.Info("loaded", "name", a.Name, "algo", a.Algo, "lisa", a.LISA, "rsf_target", a.RSFTarget, "pacing", a.Pacing)
	return actLoaded, nil
}

// undoAlgorithms unloads the algorithms a failed start loaded.
func undoAlgorithms(r *running, cfg Config, st *state) {
	for name, act := range st.algos {
		if act != actLoaded {
			continue
		}
		if err := cc.Unload(name, cfg.BPFFS); err != nil {
			r.log.Error("undoing the load of "+name, "err", err)
		}
	}
}

// algoChange is an algorithm entry whose name stays while what it is
// changes.
type algoChange struct{ old, new Algorithm }

// planAlgorithms compares the algorithms of two configurations. The pin
// root cannot move.
func planAlgorithms(p *reloadPlan, oldT, nextT *target) ([]string, []error) {
	old, cfg := oldT.cfg, nextT.cfg
	var errs []error
	if filepath.Clean(old.BPFFS) != filepath.Clean(cfg.BPFFS) {
		errs = append(errs, fmt.Errorf("bpffs: %s is in force and the file now says %s: a reload does not move what is pinned; restart the daemon to change it (what is pinned under %s stays until unloaded)", old.BPFFS, cfg.BPFFS, old.BPFFS))
	}
	var both [][2]Algorithm
	p.load, both, p.unload = byName(old.Algorithms, cfg.Algorithms, func(a Algorithm) string { return a.Name })
	for _, b := range both {
		o, a := b[0], b[1]
		switch {
		case o.Algo != a.Algo:
			p.replace = append(p.replace, algoChange{o, a})
		case o.Params() != a.Params():
			p.update = append(p.update, algoChange{o, a})
		default:
			p.keep = append(p.keep, a.Name)
		}
	}

	var out []string
	for _, a := range p.load {
		out = append(out, fmt.Sprintf("load %s (%s)", a.Name, a.Algo))
	}
	for _, c := range p.update {
		out = append(out, fmt.Sprintf("update %s in place: %+v -> %+v", c.new.Name, c.old.Params(), c.new.Params()))
	}
	for _, c := range p.replace {
		out = append(out, fmt.Sprintf("replace %s: %s -> %s (unload, then load)", c.new.Name, c.old.Algo, c.new.Algo))
	}
	for _, a := range p.unload {
		out = append(out, fmt.Sprintf("unload %s", a.Name))
	}
	return out, errs
}

// reloadAlgorithms brings the algorithms to cfg: every entry is set up as at
// start (unchanged ones are adopted with no change in the kernel); an entry
// that names another algorithm than before is unloaded first, because the
// kernel does not register two congestion controls of one name.
func (r *running) reloadAlgorithms(cfg Config, plan reloadPlan, st *state, undo *undoStack) error {
	root := cfg.BPFFS
	for _, c := range plan.replace {
		old := c.old
		alg, err := cc.Lookup(old.Algo)
		if err != nil {
			return err
		}
		if err := r.handler.exclusive(func() error { return cc.Unload(old.Name, root) }); err != nil && !errors.Is(err, cc.ErrNotLoaded) {
			return fmt.Errorf("unloading %s (%s) to load it as %s: %w", old.Name, old.Algo, c.new.Algo, err)
		}
		r.log.Info("unloaded to be replaced; its connections keep it until they close", "name", old.Name, "algo", old.Algo)
		undo.push(func() error {
			return r.handler.exclusive(func() error {
				return cc.Load(alg, cc.Options{Name: old.Name, PinRoot: root, Params: old.Params()})
			})
		})
	}
	byName, err := pinnedAlgorithms(root)
	if err != nil {
		return err
	}
	for i, a := range cfg.Algorithms {
		var act action
		if err := r.handler.exclusive(func() (err error) {
			act, err = setUpAlgorithm(root, i, a, byName, cfg.Adopt, r.log, slog.LevelDebug)
			return err
		}); err != nil {
			return err
		}
		st.algos[a.Name] = act
		name := a.Name
		switch act {
		case actLoaded:
			undo.push(func() error { return r.handler.exclusive(func() error { return cc.Unload(name, root) }) })
		case actUpdated:
			prev := byName[name].Params
			undo.push(func() error { return cc.SetParams(root, name, prev) })
		}
	}
	return nil
}

// dropAlgorithms unloads the algorithms the old configuration named and
// the new one does not (adopted ones included, as on_exit remove does).
// Connections running one keep it until they close.
func dropAlgorithms(r *running, plan reloadPlan) error {
	var errs []error
	for _, a := range plan.unload {
		if err := r.handler.exclusive(func() error { return cc.Unload(a.Name, r.cfg.BPFFS) }); err != nil && !errors.Is(err, cc.ErrNotLoaded) {
			errs = append(errs, fmt.Errorf("unloading %s: %w (it stays loaded; `mptcp-cc unload --name %s` removes it)", a.Name, err, a.Name))
			continue
		}
		r.log.Info("unloaded", "name", a.Name)
	}
	return errors.Join(errs...)
}

// removeAlgorithms is on_exit remove for the algorithms: every configured
// one, adopted or not.
func removeAlgorithms(r *running, cfg Config) error {
	var errs []error
	for _, a := range cfg.Algorithms {
		if err := cc.Unload(a.Name, cfg.BPFFS); err != nil {
			if errors.Is(err, cc.ErrNotLoaded) {
				continue
			}
			errs = append(errs, err)
			continue
		}
		r.log.Info("unloaded", "name", a.Name)
	}
	return errors.Join(errs...)
}
