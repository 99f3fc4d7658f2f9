// SPDX-License-Identifier: Apache-2.0

// Package policy attaches per-cgroup congestion control policies: a cgroup
// sock_ops BPF program (bpf/policy.bpf.c) that gives every MPTCP subflow
// created by a process in a cgroup v2 (and below it) a chosen congestion
// control, by destination prefix and port if asked, plain TCP sockets too if
// a rule says so.
//
// A policy survives the process that attached it: its link and maps are
// pinned in bpffs, one directory per cgroup, named by the cgroup's id:
//
//	<root>/<cgroup id>/link   the cgroup sock_ops link: while it exists, the policy is in force
//	<root>/<cgroup id>/rules  the rules (LPM trie)
//	<root>/<cgroup id>/stats  counters (per CPU)
//	<root>/<cgroup id>/meta   the cgroup's path and the next rule id
//
// Precedence: within one cgroup, the most specific rule wins (longest
// destination prefix, then a rule with a port over one without); across
// nested cgroups, the policy of the cgroup nearest to the socket's wins;
// subflows that join a connection take the CC the connection already runs.
// docs/policy.md has the details.
package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// DefaultPinRoot is where policies are pinned unless told otherwise.
const DefaultPinRoot = "/sys/fs/bpf/mptcp-cc-policy"

// More errors callers can test for (errors.Is).
var (
	// The kernel package's, under this package's name.
	ErrNotRoot       = kernel.ErrNotRoot
	ErrNotRegistered = kernel.ErrNotRegistered

	ErrNoPolicy     = errors.New("has no policy")
	ErrNoSuchRule   = errors.New("no such rule")
	ErrInvalidRule  = errors.New("invalid rule")
	ErrOtherVersion = errors.New("the cgroup's policy is another version's")
)

// Rule is one policy rule: sockets of processes in Cgroup (and below it)
// whose peer is in Dst and whose service port is DstPort get CC.
type Rule struct {
	Cgroup   string       // cgroup v2 directory: absolute, or relative to the cgroup v2 mount
	CC       string       // congestion control, as the kernel lists it (e.g. mptcp_olia, cubic)
	Dst      netip.Prefix // peer address prefix; the zero Prefix matches every peer
	DstPort  uint16       // service port (remote when connecting, local when accepting); 0: any
	PlainTCP bool         // plain TCP sockets too, not only MPTCP subflows
	// DelackMax caps the delayed-ACK timer of the sockets the rule matches
	// (0: the kernel's, about 40 ms), joining subflows included. On a
	// receiver of MPTCP traffic it bounds how long a subflow's ACK can be
	// held (docs/kernel-faults.md section 3). The kernel takes 2 of its
	// ticks to 200 ms: 8 ms at HZ=250.
	DelackMax time.Duration
}

// RuleInfo is a rule as List reports it.
type RuleInfo struct {
	ID         uint32        `json:"id"`
	CC         string        `json:"cc"`
	Dst        netip.Prefix  `json:"dst"` // zero: any peer
	DstPort    uint16        `json:"dport"`
	PlainTCP   bool          `json:"tcp"`
	DelackMax  time.Duration `json:"delack_max_ns,omitempty"` // 0: the kernel's
	Applied    uint64        `json:"applied"`                 // sockets this rule chose the CC of
	Registered bool          `json:"registered"`              // the CC is registered now
}

// Counters are what the policy program saw, summed over CPUs.
type Counters struct {
	MPTCP     uint64 `json:"mptcp_subflows"` // established MPTCP subflows seen
	TCP       uint64 `json:"tcp_sockets"`    // established plain TCP sockets seen
	Matched   uint64 `json:"matched"`        // a rule decided
	Followed  uint64 `json:"followed"`       // a joining subflow took its connection's CC
	Changed   uint64 `json:"changed"`        // the CC was changed
	Delack    uint64 `json:"delack_capped"`  // a rule capped the delayed-ACK timer
	Errors    uint64 `json:"errors"`         // setting the CC or the cap failed
	LastError int64  `json:"last_error"`     // errno of the last failure, negative
}

// Attachment is the policy of one cgroup.
type Attachment struct {
	Cgroup   string     `json:"cgroup"`
	CgroupID uint64     `json:"cgroup_id"`
	PinDir   string     `json:"pin_dir"`
	Attached bool       `json:"attached"` // false: the cgroup was removed (stale pins)
	Rules    []RuleInfo `json:"rules"`
	Counters Counters   `json:"counters"`
}

const (
	kindMPTCP = 1
	kindTCP   = 2
	ccNameMax = 16
)

// meta is the value of the meta map (created here, not used by BPF).
type meta struct {
	CgroupID uint64
	NextRule uint32
	PathLen  uint32
	Path     [4080]byte
}

func metaSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: "policy_meta", Type: ebpf.Array, KeySize: 4, ValueSize: 4096, MaxEntries: 1}
}

func defaultRoot(root string) string {
	if root == "" {
		return DefaultPinRoot
	}
	return root
}

// Attach adds a rule to the policy of r.Cgroup, attaching the policy
// program to the cgroup if it has none yet. A rule with the same
// destination and port as an existing one replaces it (keeping its id).
// Either the rule is in force when Attach returns nil, or nothing changed.
func Attach(r Rule, root string) error {
	_, err := AttachRule(r, root)
	return err
}

// AttachRule is Attach that also returns the rule as it was stored.
func AttachRule(r Rule, root string) (_ RuleInfo, err error) {
	root = defaultRoot(root)
	if err := kernel.CheckPrivileges(); err != nil {
		return RuleInfo{}, err
	}
	if err := kernel.NeedPolicy.Check(); err != nil {
		return RuleInfo{}, err
	}
	val, err := r.value()
	if err != nil {
		return RuleInfo{}, err
	}
	cg, err := resolveCgroup(r.Cgroup)
	if err != nil {
		return RuleInfo{}, err
	}
	if err := CheckCC(r.CC); err != nil {
		return RuleInfo{}, err
	}
	_, statErr := os.Stat(root)
	unlock, err := lockRoot(root, true)
	if err != nil {
		return RuleInfo{}, err
	}
	defer unlock()
	if errors.Is(statErr, os.ErrNotExist) {
		defer func() {
			if err != nil { // a failed first attach leaves no root it made behind
				kernel.RemoveEmptyRoot(root)
			}
		}()
	}

	dir := pinDir(root, cg.id)
	if _, err := os.Stat(dir); err == nil {
		p, err := openPinned(dir)
		if err != nil {
			return RuleInfo{}, fmt.Errorf("the policy pinned at %s is damaged (%v): remove it with `mptcp-cc policy detach --cgroup %s`", dir, err, cg.path)
		}
		defer p.close()
		if !linkAttached(dir) {
			return RuleInfo{}, fmt.Errorf("the policy pinned at %s is no longer attached to %s (detached from outside?): remove it with `mptcp-cc policy detach --cgroup %s` and attach again", dir, cg.path, cg.path)
		}
		return p.add(r, val)
	}
	return attachNew(cg, dir, r, val)
}

// attachNew loads the program for a cgroup without a policy, puts the first
// rule in, attaches and pins. A failure at any step undoes the others.
func attachNew(cg cgroup, dir string, r Rule, val policyRule) (info RuleInfo, err error) {
	spec, err := loadPolicy()
	if err != nil {
		return RuleInfo{}, err
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return RuleInfo{}, fmt.Errorf("the kernel's verifier rejected the policy program: %+v", ve)
		}
		return RuleInfo{}, fmt.Errorf("loading the policy program: %w", err)
	}
	defer coll.Close()
	mm, err := ebpf.NewMap(metaSpec())
	if err != nil {
		return RuleInfo{}, fmt.Errorf("creating the policy's meta map: %w", err)
	}
	defer mm.Close()

	p := &pinned{rules: coll.Maps["rules"], stats: coll.Maps["stats"], meta: mm}
	m := meta{CgroupID: cg.id, NextRule: 1}
	if len(cg.path) > len(m.Path) {
		return RuleInfo{}, fmt.Errorf("cgroup path %s is longer than %d bytes", cg.path, len(m.Path))
	}
	m.PathLen = uint32(copy(m.Path[:], cg.path))
	if err := mm.Put(uint32(0), &m); err != nil {
		return RuleInfo{}, fmt.Errorf("writing the policy's meta map: %w", err)
	}
	if info, err = p.add(r, val); err != nil {
		return RuleInfo{}, err
	}

	l, err := link.AttachCgroup(link.CgroupOptions{Path: cg.path, Attach: ebpf.AttachCGroupSockOps, Program: coll.Programs["mptcp_cc_policy"]})
	if err != nil {
		return RuleInfo{}, fmt.Errorf("attaching the policy program to cgroup %s: %w", cg.path, err)
	}
	defer l.Close() // the pin keeps it; without the pin, closing detaches it

	if err := os.Mkdir(dir, 0o700); err != nil {
		return RuleInfo{}, fmt.Errorf("creating pin directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = l.Unpin()
			_ = os.RemoveAll(dir)
		}
	}()
	for name, m := range map[string]*ebpf.Map{"rules": p.rules, "stats": p.stats, "meta": mm} {
		if err := m.Pin(filepath.Join(dir, name)); err != nil {
			return RuleInfo{}, fmt.Errorf("pinning %s: %w", name, err)
		}
	}
	if err := l.Pin(filepath.Join(dir, "link")); err != nil {
		return RuleInfo{}, fmt.Errorf("pinning the cgroup link: %w", err)
	}
	return info, nil
}

// Detach removes the whole policy of a cgroup: the program stops running for
// new sockets at once; sockets keep the CC they were given. A cgroup that
// no longer exists is found by the path it had.
func Detach(cgroup, root string) error {
	root = defaultRoot(root)
	if err := kernel.CheckPrivileges(); err != nil {
		return err
	}
	unlock, err := lockRoot(root, false)
	if err != nil {
		return err
	}
	defer unlock()
	dir, err := findPolicy(cgroup, root)
	if err != nil {
		return err
	}
	return removePolicy(root, dir)
}

// DetachRule removes one rule (by the id List reports); removing the last
// rule detaches the policy.
func DetachRule(cgroup string, id uint32, root string) error {
	n, err := removeRules(cgroup, root, func(r RuleInfo) bool { return r.ID == id })
	if err == nil && n == 0 {
		err = fmt.Errorf("cgroup %s: %w %d (`mptcp-cc policy list` shows the rules)", cgroup, ErrNoSuchRule, id)
	}
	return err
}

// DetachCC removes every rule of a cgroup that names the congestion
// control cc and returns how many there were; removing the last rule
// detaches the policy.
func DetachCC(cgroup, cc, root string) (int, error) {
	n, err := removeRules(cgroup, root, func(r RuleInfo) bool { return r.CC == cc })
	if err == nil && n == 0 {
		err = fmt.Errorf("cgroup %s: %w naming %s (`mptcp-cc policy list` shows the rules)", cgroup, ErrNoSuchRule, cc)
	}
	return n, err
}

func removeRules(cgroup, root string, match func(RuleInfo) bool) (int, error) {
	root = defaultRoot(root)
	if err := kernel.CheckPrivileges(); err != nil {
		return 0, err
	}
	unlock, err := lockRoot(root, false)
	if err != nil {
		return 0, err
	}
	defer unlock()
	dir, err := findPolicy(cgroup, root)
	if err != nil {
		return 0, err
	}
	p, err := openPinned(dir)
	if err != nil {
		return 0, fmt.Errorf("the policy pinned at %s is damaged (%v): remove it whole with `mptcp-cc policy detach --cgroup %s`", dir, err, cgroup)
	}
	defer p.close()
	entries, err := p.entries()
	if err != nil {
		return 0, err
	}
	removed, left := 0, 0
	for _, e := range entries {
		if !match(e.info) {
			if e.key.Kind == kindMPTCP {
				left++
			}
			continue
		}
		if err := p.rules.Delete(&e.key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return removed, fmt.Errorf("removing rule %d: %w", e.info.ID, err)
		}
		if e.key.Kind == kindMPTCP {
			removed++
		}
	}
	if removed > 0 && left == 0 {
		p.close()
		return removed, removePolicy(root, dir)
	}
	return removed, nil
}

// findPolicy returns the pin directory of a cgroup's policy: by the
// cgroup's id while it exists, by the path recorded at attach otherwise.
func findPolicy(cgroup, root string) (string, error) {
	if err := checkCgroupArg(cgroup); err != nil {
		return "", err
	}
	if cg, err := resolveCgroup(cgroup); err == nil {
		dir := pinDir(root, cg.id)
		if _, err := os.Stat(dir); err == nil {
			return dir, nil
		}
		return "", fmt.Errorf("cgroup %s %w (nothing pinned at %s)", cg.path, ErrNoPolicy, dir)
	}
	want := cgroup
	if !filepath.IsAbs(want) {
		if mnt, err := CgroupMount(); err == nil {
			want = filepath.Join(mnt, want)
		}
	}
	want = filepath.Clean(want)
	all, err := List(root)
	if err != nil {
		return "", err
	}
	for _, a := range all {
		if a.Cgroup == want {
			return a.PinDir, nil
		}
	}
	return "", fmt.Errorf("cgroup %s %w (`mptcp-cc policy list` shows the policies)", want, ErrNoPolicy)
}

// removePolicy detaches the pinned link (even if another process holds a
// file descriptor of it) and removes the pins, and the root with them when
// this was its last policy (the caller holds the root's lock).
func removePolicy(root, dir string) error {
	if l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil); err == nil {
		// Detach works even while another process holds a descriptor of
		// the link; if it fails, closing the last descriptor detaches.
		_ = l.Unpin()
		_ = l.Detach()
		_ = l.Close()
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	kernel.RemoveEmptyRoot(root)
	return nil
}

func pinDir(root string, id uint64) string {
	return filepath.Join(root, strconv.FormatUint(id, 10))
}

// validCCName follows the kernel: TCP_CA_NAME_MAX is 16 bytes with the NUL.
func validCCName(name string) error {
	if len(name) == 0 || len(name) >= ccNameMax {
		return fmt.Errorf("%w: congestion control name %q must be 1 to %d characters", ErrInvalidRule, name, ccNameMax-1)
	}
	for i := 0; i < len(name); i++ {
		if name[i] <= ' ' || name[i] >= 0x7f {
			return fmt.Errorf("%w: congestion control name %q has a character the kernel does not use", ErrInvalidRule, name)
		}
	}
	return nil
}

func registeredSet() map[string]bool {
	set, _ := kernel.CongestionControlSet()
	return set
}

// CheckCC fails unless the kernel has a congestion control of that name
// registered; the error says how to load one of this project's.
func CheckCC(name string) error {
	if err := validCCName(name); err != nil {
		return err
	}
	return kernel.RequireCongestionControl(name)
}

// lockRoot serialises changes to the policies under root (flock on the
// root directory, which works on bpffs too); with create it makes the root
// first (mounting bpffs if need be). The last detach removes the root while
// holding its lock, so a lock taken on a root that was removed meanwhile
// (and perhaps made again) locks nothing: it tries again on the root as it
// is now.
func lockRoot(root string, create bool) (func(), error) {
	for range 10 {
		if create {
			if err := kernel.EnsureBPFFS(root); err != nil {
				return nil, err
			}
		}
		f, err := os.Open(root)
		if errors.Is(err, os.ErrNotExist) {
			if create {
				continue // removed between the two calls
			}
			return func() {}, nil // nothing pinned: nothing to race with
		}
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", root, err)
		}
		unlock := func() {
			_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
			_ = f.Close()
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(root)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return unlock, nil
		}
		unlock()
	}
	return nil, fmt.Errorf("locking %s: other processes keep removing and making it again; try again", root)
}
