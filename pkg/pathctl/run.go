// SPDX-License-Identifier: Apache-2.0

package pathctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// Apply says how a backup flag reaches the kernel.
type Apply string

const (
	// PerConnection flags the connection's own subflows (MPTCP_PM_CMD_SET_FLAGS
	// with its token). The kernel takes it only under the userspace path
	// manager (net.mptcp.pm_type=1, as mptcpd runs).
	PerConnection Apply = "connection"
	// PerEndpoint flags the in-kernel path manager's endpoint of the
	// subflow's local address: every connection using that endpoint,
	// present and future, treats its subflows there as backup.
	PerEndpoint Apply = "endpoint"
	// Auto is PerConnection under the userspace path manager; under the
	// in-kernel one Run refuses it (ErrEndpointNotAsked): flagging an
	// endpoint changes every connection that uses it, which a caller must
	// ask for by name.
	Auto Apply = "auto"
)

// ErrEndpointNotAsked: Auto under the in-kernel path manager, where only
// endpoints can be flagged.
var ErrEndpointNotAsked = errors.New("the in-kernel path manager can flag only endpoints, and flagging one changes every connection that uses it, present and future")

// Options for Run.
type Options struct {
	NS     string // network namespace of the connection ("" for the caller's)
	Token  uint32 // the connection (its local token, as `mptcp-cc subflows` shows)
	Apply  Apply  // default Auto
	Config Config
	// Event, if set, is called for every decision that switched, ended a
	// trial or abandoned one (a subflow closed during it), and every error
	// applying one.
	Event func(Event)
}

// Event is one switch (or a failure to apply it).
type Event struct {
	At       time.Time
	Token    uint32
	Apply    Apply
	Decision Decision
	Err      error
}

// ErrNoConnection says the token names no live connection.
var ErrNoConnection = errors.New("no such connection")

func nsName(ns string) string {
	if ns == "" {
		return "this network namespace"
	}
	return "network namespace " + ns
}

// Run controls one connection until it closes (returns nil) or ctx ends
// (returns ctx's error). Whatever it flagged is cleared before it returns,
// so it leaves no flag behind.
func Run(ctx context.Context, o Options) (err error) {
	if o.Token == 0 {
		return errors.New("pathctl: no connection token given (`ss -Mi` shows every MPTCP connection's token; `mptcp-cc subflows` those that run one of mptcp-cc's congestion controls)")
	}
	cfg := o.Config.withDefaults()
	sd, err := sockdiag.DialNS(o.NS)
	if err != nil {
		return fmt.Errorf("pathctl: %w", err)
	}
	defer sd.Close()
	pm, err := mptcpnl.DialNS(o.NS)
	if err != nil {
		return fmt.Errorf("pathctl: %w", err)
	}
	defer pm.Close()
	apply := o.Apply
	if apply == "" || apply == Auto {
		if t, err := pmType(o.NS); err != nil || t != 1 {
			return fmt.Errorf("pathctl: %s runs the in-kernel path manager: %w. Ask for it with --apply endpoint (the daemon: pathctl.apply: endpoint) where every connection should follow, or run the userspace path manager (net.mptcp.pm_type=1, as mptcpd does) for one connection's flags (docs/pathctl.md)", nsName(o.NS), ErrEndpointNotAsked)
		}
		apply = PerConnection
	}
	if cfg.ResetStalled && apply != PerConnection {
		return fmt.Errorf("pathctl: closing stalled subflows needs per-connection control, and %s runs the in-kernel path manager (or --apply endpoint was given): run the userspace one (net.mptcp.pm_type=1, as mptcpd does) with --apply connection or auto", nsName(o.NS))
	}
	a := &applier{pm: pm, how: apply, token: o.Token, flagged: map[SubflowID]bool{}, failed: map[SubflowID]bool{}}
	defer func() {
		if cerr := a.clearAll(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	e := NewEngine(cfg)
	tick := time.NewTicker(cfg.Period)
	defer tick.Stop()
	gone, seen, trial := 0, false, false
	for {
		s, serr := sample(sd, o.Token)
		if serr != nil {
			return serr
		}
		if len(s.Subflows) == 0 {
			// A connection between its subflows (a join in progress) shows
			// none for a moment; two empty samples in a row is a close.
			if gone++; gone >= 2 {
				if !seen {
					return fmt.Errorf("%w: no MPTCP subflow has token %08x in %s (`ss -Mi` shows every MPTCP connection's token; `mptcp-cc subflows` those that run one of mptcp-cc's congestion controls)", ErrNoConnection, o.Token, nsName(o.NS))
				}
				return nil
			}
		} else {
			gone, seen = 0, true
			d := e.Step(s)
			aerr := a.apply(s, d)
			if d.Peek != (SubflowID{}) && aerr == nil {
				rate, delivered, perr := a.peek(sd, s, d.Peek, cfg.Period)
				if perr != nil {
					aerr = perr
				} else {
					e.Peeked(d.Peek, rate, delivered)
				}
			}
			if reportable(d, trial, aerr) && o.Event != nil {
				o.Event(Event{At: s.At, Token: o.Token, Apply: apply, Decision: d, Err: aerr})
			}
			trial = d.Trial
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// reportable says whether Run reports d, given whether the previous
// decision was a trial. A trial ends in a decision that chose (Chosen) or
// interrupted it (Switched), except when a subflow closes during a trial of
// multipath: the engine is then already in multipath, so nothing switched,
// yet observers that saw the trial start must see it end.
func reportable(d Decision, wasTrial bool, err error) bool {
	return d.Switched || d.Chosen || err != nil || d.Trial != wasTrial
}

// sample reads the connection's subflows from sock_diag.
func sample(sd *sockdiag.Conn, token uint32) (Sample, error) {
	s := Sample{At: time.Now()}
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := sd.TCP(fam, sockdiag.StateSet(sockdiag.Established))
		if err != nil {
			return s, fmt.Errorf("pathctl: reading subflows: %w", err)
		}
		for _, k := range socks {
			if !k.MPTCP || k.Token != token {
				continue
			}
			s.Subflows = append(s.Subflows, SubflowSample{
				ID:           SubflowID{Local: k.Local, Remote: k.Remote},
				DeliveryRate: k.Info.Delivery_rate,
				BytesAcked:   k.Info.Bytes_acked,
				NotSent:      k.Info.Notsent_bytes,
				Unacked:      k.Info.Unacked,
				SRTT:         time.Duration(k.Info.Rtt) * time.Microsecond,
				Backup:       k.BackupLocal,
			})
		}
	}
	return s, nil
}

// applier turns decisions into flags and remembers what it set.
type applier struct {
	pm      *mptcpnl.Conn
	how     Apply
	token   uint32
	flagged map[SubflowID]bool
	// failed holds, per subflow, the flag value the kernel refused. The
	// same request is not repeated (and so not reported again) every
	// period: a subflow whose address is no endpoint, such as the initial
	// subflow under the in-kernel path manager, would otherwise fail and
	// log once per period for the connection's whole life. A new decision
	// for that subflow tries again.
	failed map[SubflowID]bool
}

func (a *applier) apply(s Sample, d Decision) error {
	want := map[SubflowID]bool{}
	for _, id := range d.Backup {
		want[id] = true
	}
	var errs []error
	for _, id := range d.Reset {
		if err := a.reset(id); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sf := range s.Subflows {
		if v, ok := a.failed[sf.ID]; ok {
			if v == want[sf.ID] {
				continue // refused before, and said so then
			}
			delete(a.failed, sf.ID)
		}
		if want[sf.ID] == sf.Backup && want[sf.ID] == a.flagged[sf.ID] {
			continue
		}
		if !want[sf.ID] && !a.flagged[sf.ID] {
			continue // flagged by someone else: not ours to clear
		}
		if err := a.set(sf.ID, want[sf.ID]); err != nil {
			a.failed[sf.ID] = want[sf.ID]
			errs = append(errs, err)
			continue
		}
		delete(a.failed, sf.ID)
		if want[sf.ID] {
			a.flagged[sf.ID] = true
		} else {
			delete(a.flagged, sf.ID)
		}
	}
	return errors.Join(errs...)
}

func (a *applier) set(id SubflowID, backup bool) error {
	if a.how == PerConnection {
		return a.pm.SetSubflowBackup(a.token, id.Local, id.Remote, backup)
	}
	eps, err := a.pm.Endpoints()
	if err != nil {
		return err
	}
	for _, ep := range eps {
		if ep.Addr == id.Local.Addr().Unmap() {
			f := ep.Flags &^ mptcpnl.FlagBackup
			if backup {
				f |= mptcpnl.FlagBackup
			}
			return a.pm.SetEndpointFlags(ep.ID, f)
		}
	}
	return fmt.Errorf("pathctl: subflow %v: its local address is no endpoint of the in-kernel path manager, so it cannot be flagged per endpoint; add one (`ip mptcp endpoint add %v subflow`) or run the userspace path manager for per-connection flags", id, id.Local.Addr())
}

// peek clears backup subflow id's flag for one of its round trips and a
// quarter (at least 20 ms, at most half a period): about one initial
// window goes out and its ACKs come back. It reads the delivery rate that
// reached and whether the subflow delivered anything, and flags it again.
// Longer peeks measure more but cost more: whatever the path carries
// meanwhile, the receiver may wait for (a first version waited two round
// trips and cost 4-6% of the goodput where the backup path was 150 ms
// long). Per endpoint, every connection on that endpoint may use the path
// meanwhile.
func (a *applier) peek(sd *sockdiag.Conn, before Sample, id SubflowID, period time.Duration) (rate uint64, delivered bool, err error) {
	var acked uint64
	wait := 20 * time.Millisecond
	for _, sf := range before.Subflows {
		if sf.ID == id {
			acked, wait = sf.BytesAcked, max(wait, min(sf.SRTT+sf.SRTT/4, period/2))
		}
	}
	if err := a.set(id, false); err != nil {
		return 0, false, err
	}
	time.Sleep(wait)
	after, serr := sample(sd, a.token)
	if err := a.set(id, true); err != nil {
		return 0, false, errors.Join(serr, fmt.Errorf("pathctl: flagging %v backup again after a peek: %w", id, err))
	}
	if serr != nil {
		return 0, false, serr
	}
	for _, sf := range after.Subflows {
		if sf.ID == id {
			return sf.DeliveryRate, sf.BytesAcked > acked, nil
		}
	}
	return 0, false, nil // it closed meanwhile
}

// reset closes a subflow and opens one again from the same local address
// to the same peer (per connection only): the connection resends, on its
// other subflows, what it had queued on the closed one.
func (a *applier) reset(id SubflowID) error {
	if a.how != PerConnection {
		return fmt.Errorf("pathctl: subflow %v: closing a stalled subflow needs the userspace path manager (net.mptcp.pm_type=1) and --apply connection", id)
	}
	delete(a.flagged, id)
	delete(a.failed, id)
	if err := a.pm.DestroySubflow(a.token, id.Local, id.Remote); err != nil {
		return err
	}
	if err := a.pm.CreateSubflow(a.token, id.Local.Addr(), id.Remote); err != nil {
		// Measured on 6.18: the initial subflow's address (ID 0) cannot be
		// given to a new subflow under the userspace path manager.
		return fmt.Errorf("pathctl: closed the stalled subflow %v (its data goes out on the others) but could not open one again from %v: %w", id, id.Local.Addr(), err)
	}
	return nil
}

func (a *applier) clearAll() error {
	var errs []error
	for id := range a.flagged {
		if err := a.set(id, false); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, err)
		}
		delete(a.flagged, id)
	}
	return errors.Join(errs...)
}

// pmType reads net.mptcp.pm_type in a namespace.
func pmType(ns string) (int, error) {
	var v int
	s, err := kernel.Sysctl(ns, "net.mptcp.pm_type")
	if err != nil {
		return 0, err
	}
	_, err = fmt.Sscanf(s, "%d", &v)
	return v, err
}

// ParseOnStall checks a user's answer to a stall ("flag" or "reset") under
// apply mode how, and says whether it is Config.ResetStalled.
func ParseOnStall(s string, how Apply) (reset bool, err error) {
	switch s {
	case "flag", "":
		return false, nil
	case "reset":
		if how == PerEndpoint {
			return false, errors.New("reset closes one connection's subflow, which only the userspace path manager does: give apply connection or auto")
		}
		return true, nil
	}
	return false, fmt.Errorf("on a stall: %q is not an answer: give flag (a backup flag on the stuck subflow) or reset (close it and open it again)", s)
}

// ParsePrefer checks a user's preference on a tie between the modes:
// "goodput" (the default: the held mode keeps a tie) or "latency" (a tie
// goes to best-path mode, Config.PreferBestPath).
func ParsePrefer(s string) (bestPath bool, err error) {
	switch s {
	case "goodput", "":
		return false, nil
	case "latency":
		return true, nil
	}
	return false, fmt.Errorf("prefer: %q is neither goodput (the held mode keeps a tie) nor latency (a tie goes to best-path mode, where no data waits for a slower path)", s)
}

// ParseApply checks a user's --apply value.
func ParseApply(s string) (Apply, error) {
	switch Apply(s) {
	case PerConnection, PerEndpoint, Auto:
		return Apply(s), nil
	case "":
		return Auto, nil
	}
	return "", fmt.Errorf("unknown apply mode %q: use connection, endpoint or auto", s)
}
