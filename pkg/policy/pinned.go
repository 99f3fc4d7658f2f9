// SPDX-License-Identifier: Apache-2.0

package policy

// Reading what is pinned: the list of policies, their rules and counters.

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// List returns every policy pinned under root, sorted by cgroup path.
func List(root string) ([]Attachment, error) {
	root = defaultRoot(root)
	dirs, err := kernel.PinDirs(root)
	if err != nil {
		return nil, err
	}
	var out []Attachment
	for _, name := range dirs {
		if _, err := strconv.ParseUint(name, 10, 64); err != nil {
			continue
		}
		a, err := inspect(filepath.Join(root, name))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(root, name), err)
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cgroup < out[j].Cgroup })
	return out, nil
}

func inspect(dir string) (Attachment, error) {
	a := Attachment{PinDir: dir}
	p, err := openPinned(dir)
	if err != nil {
		return a, err
	}
	defer p.close()
	var m meta
	if err := p.meta.Lookup(uint32(0), &m); err != nil {
		return a, fmt.Errorf("reading meta: %w", err)
	}
	a.CgroupID = m.CgroupID
	a.Cgroup = string(m.Path[:min(int(m.PathLen), len(m.Path))])
	a.Attached = linkAttached(dir)
	entries, err := p.entries()
	if err != nil {
		return a, err
	}
	registered := registeredSet()
	tcpApplied := map[uint32]uint64{} // a PlainTCP rule's second entry counts too
	for _, e := range entries {
		if e.key.Kind != kindMPTCP {
			tcpApplied[e.info.ID] += e.info.Applied
			continue
		}
		e.info.Registered = registered[e.info.CC]
		a.Rules = append(a.Rules, e.info)
	}
	for i := range a.Rules {
		a.Rules[i].Applied += tcpApplied[a.Rules[i].ID]
	}
	sort.Slice(a.Rules, func(i, j int) bool { return a.Rules[i].ID < a.Rules[j].ID })
	a.Counters, err = p.counters()
	return a, err
}

// linkAttached reports whether the pinned link of a policy is still
// attached to a live cgroup.
func linkAttached(dir string) bool {
	l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil)
	if err != nil {
		return false
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		return false
	}
	c := info.Cgroup()
	return c != nil && c.CgroupId != 0
}

// pinned is an open policy: its maps.
type pinned struct {
	rules, stats, meta *ebpf.Map
}

func openPinned(dir string) (*pinned, error) {
	p := &pinned{}
	var err error
	for name, dst := range map[string]**ebpf.Map{"rules": &p.rules, "stats": &p.stats, "meta": &p.meta} {
		if *dst, err = ebpf.LoadPinnedMap(filepath.Join(dir, name), nil); err != nil {
			p.close()
			return nil, fmt.Errorf("opening %s: %w", name, err)
		}
	}
	// A policy pinned by a version whose program keeps other counters
	// (before the delayed-ACK cap, 7 of them) cannot be read or extended
	// by this one.
	if want := uint32(binary.Size(policyCounters{})); p.stats.ValueSize() != want {
		size := p.stats.ValueSize()
		p.close()
		return nil, fmt.Errorf("%w: its counters are %d bytes, this version's %d: it was attached by another version of mptcp-cc; detach it (mptcp-cc policy detach --cgroup CGROUP) and attach its rules again",
			ErrOtherVersion, size, want)
	}
	return p, nil
}

func (p *pinned) close() {
	for _, m := range []*ebpf.Map{p.rules, p.stats, p.meta} {
		if m != nil {
			_ = m.Close()
		}
	}
	p.rules, p.stats, p.meta = nil, nil, nil
}

type entry struct {
	key  policyRuleKey
	val  policyRule
	info RuleInfo
}

func (p *pinned) entries() ([]entry, error) {
	var (
		out []entry
		k   policyRuleKey
		v   policyRule
	)
	it := p.rules.Iterate()
	for it.Next(&k, &v) {
		out = append(out, entry{key: k, val: v, info: decode(k, v)})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading rules: %w", err)
	}
	return out, nil
}

func (p *pinned) counters() (Counters, error) {
	var per []policyCounters
	if err := p.stats.Lookup(uint32(0), &per); err != nil {
		return Counters{}, fmt.Errorf("reading counters: %w", err)
	}
	var c Counters
	for _, x := range per {
		c.MPTCP += x.Mptcp
		c.TCP += x.Tcp
		c.Matched += x.Matched
		c.Followed += x.Followed
		c.Changed += x.Changed
		c.Delack += x.Delack
		c.Errors += x.Errors
		if x.LastError != 0 {
			c.LastError = x.LastError
		}
	}
	return c, nil
}

// add stores a rule: under kind MPTCP always, under kind TCP too for a
// PlainTCP rule. A rule with the same key is replaced and keeps its id.
// On failure the previous entries are put back.
func (p *pinned) add(r Rule, val policyRule) (RuleInfo, error) {
	var m meta
	if err := p.meta.Lookup(uint32(0), &m); err != nil {
		return RuleInfo{}, fmt.Errorf("reading meta: %w", err)
	}
	kMPTCP, kTCP := r.key(kindMPTCP), r.key(kindTCP)
	// Lookups in an LPM trie return the longest matching prefix, not the
	// exact key: find existing entries by walking the keys.
	entries, err := p.entries()
	if err != nil {
		return RuleInfo{}, err
	}
	var old, oldTCP policyRule
	var replacing, hadTCP bool
	for _, e := range entries {
		switch e.key {
		case kMPTCP:
			old, replacing = e.val, true
		case kTCP:
			oldTCP, hadTCP = e.val, true
		}
	}
	if replacing {
		val.Id = old.Id
	} else {
		val.Id = m.NextRule
		m.NextRule++
	}

	restore := func() {
		if replacing {
			_ = p.rules.Put(&kMPTCP, &old)
		} else {
			_ = p.rules.Delete(&kMPTCP)
		}
		if hadTCP {
			_ = p.rules.Put(&kTCP, &oldTCP)
		} else {
			_ = p.rules.Delete(&kTCP)
		}
	}
	if err := p.rules.Put(&kMPTCP, &val); err != nil {
		restore()
		return RuleInfo{}, fmt.Errorf("storing the rule: %w", err)
	}
	if r.PlainTCP {
		err = p.rules.Put(&kTCP, &val)
	} else if hadTCP {
		err = p.rules.Delete(&kTCP)
	}
	if err == nil && !replacing {
		err = p.meta.Put(uint32(0), &m)
	}
	if err != nil {
		restore()
		return RuleInfo{}, fmt.Errorf("storing the rule: %w", err)
	}
	info := decode(kMPTCP, val)
	info.Registered = true
	return info, nil
}
