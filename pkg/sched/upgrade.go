// SPDX-License-Identifier: Apache-2.0

package sched

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// NoUpdate says why a scheduler is not upgraded in place: the kernel's
// scheduler hook (bpf_mptcp_sched_ops in net/mptcp/bpf.c, mptcp_net-next's
// export branch, as in the 7.3.4 test kernel) implements reg, unreg and
// validate but no update, so the kernel answers BPF_LINK_UPDATE on a
// scheduler's struct_ops link with EOPNOTSUPP.
const NoUpdate = "the kernel's MPTCP scheduler hook has no struct_ops update operation (bpf_mptcp_sched_ops in mptcp_net-next has reg, unreg and validate only), so it refuses to replace a registered scheduler's programs in place (BPF_LINK_UPDATE)"

// Upgraded is the outcome of upgrading one loaded scheduler.
type Upgraded struct {
	Name     string          `json:"name"`
	Algo     string          `json:"algo"`
	From     structops.Build `json:"from"`
	To       structops.Build `json:"to"`
	Recorded bool            `json:"recorded"` // From was read from its build record
	Skipped  bool            `json:"skipped"`  // already this binary's build
	// InPlace: the kernel replaced the programs under the registered name
	// (BPF_LINK_UPDATE). Otherwise Refused is what it answered to that, and
	// the name was unregistered and registered again with the new build:
	// for Window, new connections of a namespace that names it got the
	// kernel's default scheduler.
	InPlace bool          `json:"in_place"`
	Refused string        `json:"refused,omitempty"`
	Window  time.Duration `json:"window_ns,omitempty"`
}

// Upgrade replaces the programs of the loaded scheduler name with this
// binary's build of its algorithm, under the same name and on the same
// pinned maps (the parameters, the per-subflow counters and the trace), so
// `sched list` and the metrics go on without a gap. Connections already
// open keep the programs they run until they close; connections opened
// from then on run the new build. The kernel's scheduler hook cannot
// update a registration in place (NoUpdate), so where it refuses, the new
// build is loaded and verified first, then the old registration removed
// and the new one added at once (structops.Family.Replace): for that
// window (Upgraded.Window, microseconds), a new connection in a namespace
// that names the scheduler gets the kernel's default one. A registration
// that is already this build is skipped unless force.
func Upgrade(name, root string, force bool) (Upgraded, error) {
	root = family.PinRoot(root)
	u := Upgraded{Name: name}
	if err := family.ValidName(name); err != nil {
		return u, err
	}
	if err := kernel.CheckPrivileges(); err != nil {
		return u, err
	}
	dir, err := family.Dir(root, name)
	if err != nil {
		return u, err
	}
	l, err := inspect(root, name)
	if err != nil {
		return u, fmt.Errorf("%s: %w", name, err)
	}
	u.Algo, u.From, u.Recorded = l.Algorithm, l.Build, l.BuildRecorded
	if !l.Registered {
		return u, fmt.Errorf("%s is pinned but not registered: nothing runs it to upgrade; `mptcp-cc sched unload %s` clears the pins", name, name)
	}
	a, err := Lookup(l.Algorithm)
	if err != nil {
		return u, fmt.Errorf("%s runs a scheduler this build does not have (%q): %w", name, l.Algorithm, err)
	}
	u.To = structops.ThisBuild()
	if l.Current() && !force {
		u.To, u.Skipped = l.Build, true
		return u, nil
	}
	obj := structops.Object{Algo: a.Name, Spec: a.Spec, Maps: pinnedMaps}
	r, err := family.Replace(obj, dir, u.To, nil)
	u.To, u.InPlace, u.Window = r.New, r.InPlace, r.Window
	if r.Refused != nil {
		u.Refused = r.Refused.Error()
	}
	if err != nil && errors.Is(r.Refused, unix.EOPNOTSUPP) {
		return u, fmt.Errorf("%w (%s); re-registering instead failed: %w", structops.ErrNoLinkUpdate, NoUpdate, err)
	}
	return u, err
}
