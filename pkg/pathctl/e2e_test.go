// SPDX-License-Identifier: Apache-2.0

package pathctl_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// backupFlags is the kernel's own view: which of the connection's subflows
// (by local address) carry the local backup flag.
func backupFlags(t *testing.T, ns string, token uint32) map[netip.Addr]bool {
	t.Helper()
	socks, err := sockdiag.Dump(ns, 2, sockdiag.StateSet(sockdiag.Established))
	if err != nil {
		t.Fatal(err)
	}
	out := map[netip.Addr]bool{}
	for _, s := range socks {
		if s.MPTCP && s.Token == token {
			out[s.Local.Addr()] = s.BackupLocal
		}
	}
	return out
}

// badPaths starts a transfer from path 0 over testkernel.HurtingPaths,
// two paths where aggregation hurts. userspacePM: the client runs the userspace path manager and
// the test opens the second subflow itself.
func badPaths(t *testing.T, userspacePM bool, d time.Duration) (*topo.Net, *xfer.Client, uint32) {
	t.Helper()
	n := testkernel.HurtingPaths(t, !userspacePM)
	if userspacePM {
		c, token := userspaceTransfer(t, n, xfer.Options{For: d})
		return n, c, token
	}
	_, c := testkernel.Transfer(t, n, xfer.Options{For: d})
	token := testkernel.Token(t, n.Client, c.Local())
	return n, c, token
}

// controller runs pathctl on the connection in the background; stop
// cancels it and returns its error and the events it reported.
func controller(t *testing.T, ns string, token uint32, apply pathctl.Apply) (held func(pathctl.Mode) bool, last func() pathctl.Decision, stop func() (error, []pathctl.Event)) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var events []pathctl.Event
	done := make(chan error, 1)
	go func() {
		done <- pathctl.Run(ctx, pathctl.Options{
			NS: ns, Token: token, Apply: apply,
			Config: pathctl.Config{Period: 250 * time.Millisecond, Hold: 12, Trial: 4},
			Event: func(e pathctl.Event) {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
				t.Logf("%v: %v trial=%v best=%v backup=%v (%s) err=%v", e.At.Format("15:04:05.000"), e.Decision.Mode, e.Decision.Trial, e.Decision.Best, e.Decision.Backup, e.Decision.Reason, e.Err)
			},
		})
	}()
	// held: the controller's last decision chose mode (a trial does not count).
	last = func() pathctl.Decision {
		mu.Lock()
		defer mu.Unlock()
		for i := len(events) - 1; i >= 0; i-- {
			if d := events[i].Decision; !d.Trial {
				return d
			}
		}
		return pathctl.Decision{Trial: true}
	}
	held = func(mode pathctl.Mode) bool {
		d := last()
		return !d.Trial && d.Mode == mode
	}
	stop = func() (error, []pathctl.Event) {
		cancel()
		err := <-done
		mu.Lock()
		defer mu.Unlock()
		return err, events
	}
	t.Cleanup(func() { cancel() })
	return held, last, stop
}

// waitFlag waits until the subflow from addr has the backup flag want (the
// kernel's view) and the controller chose the matching mode.
func waitFlag(t *testing.T, ns string, token uint32, addr netip.Addr, held func(pathctl.Mode) bool, want bool, within time.Duration) time.Duration {
	t.Helper()
	mode := pathctl.Multipath
	if want {
		mode = pathctl.BestPath
	}
	start := time.Now()
	for time.Since(start) < within {
		if backupFlags(t, ns, token)[addr] == want && held(mode) {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("subflow from %v: backup flag not %v with %v chosen after %v (kernel view %v)", addr, want, mode, within, backupFlags(t, ns, token))
	return 0
}

// finish checks the controller stopped cleanly and left no flag, and the
// transfer's bytes; it returns the events the controller reported.
func finish(t *testing.T, ns string, token uint32, c *xfer.Client, stop func() (error, []pathctl.Event)) []pathctl.Event {
	t.Helper()
	err, events := stop()
	if err != context.Canceled {
		t.Fatalf("controller ended with %v", err)
	}
	for a, f := range backupFlags(t, ns, token) {
		if f {
			t.Errorf("subflow from %v still flagged backup after the controller stopped", a)
		}
	}
	testkernel.NoBackupEndpoint(t, ns)
	res, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	testkernel.Receipt(t, "the transfer", res, 0)
	t.Logf("%d decisions reported; %d bytes in %v", len(events), res.Delivered, res.Duration.Round(time.Millisecond))
	return events
}

// End to end, per endpoint (the in-kernel path manager): where aggregation
// hurts, the controller flags the bad path's endpoint backup - the kernel
// reports the subflow flagged - then clears it when the paths swap
// quality, and leaves no flag when it stops.
func TestControllerFlagsBadPathPerEndpoint(t *testing.T) {
	n, c, token := badPaths(t, false, 30*time.Second)
	held, last, stop := controller(t, n.Client, token, pathctl.PerEndpoint)
	bad := topo.ClientAddr(1)
	took := waitFlag(t, n.Client, token, bad, held, true, 12*time.Second)
	t.Logf("the bad path was flagged backup after %v", took.Round(time.Millisecond))

	// The paths swap: path 0 degrades, path 1 becomes good.
	good := linkem.DirectionConfig{Rate: 10e6, Delay: 10 * time.Millisecond, QueueBytes: 150000}
	if err := n.Bottleneck(1).SetForward(good); err != nil {
		t.Fatal(err)
	}
	if err := n.Bottleneck(1).SetReverse(linkem.DirectionConfig{Delay: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := n.Bottleneck(0).SetForward(linkem.DirectionConfig{Rate: 5e5, Delay: 150 * time.Millisecond, Loss: 0.02, Seed: 9, QueueBytes: 150000}); err != nil {
		t.Fatal(err)
	}
	// Multipath or best-path on path 1: either way path 1's flag is
	// cleared by a decision, not a trial. (Path 0's subflow is the
	// initial one, whose address is no endpoint: per endpoint it cannot
	// be flagged, and the controller reports that as an apply error.)
	onRecovered := func() bool {
		d := last()
		return !d.Trial && (d.Mode == pathctl.Multipath || d.Best.Local.Addr() == bad)
	}
	start := time.Now()
	for !(backupFlags(t, n.Client, token)[bad] == false && onRecovered()) {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("path 1 recovered 15 s ago and is still flagged or not chosen (kernel view %v)", backupFlags(t, n.Client, token))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the recovered path's flag was cleared after %v", time.Since(start).Round(time.Millisecond))
	// Path 0 back to good before the transfer ends: what the kernel still
	// holds for path 0's subflow would otherwise drain at 500 kbit/s with
	// 2% loss, past the 60 s the client waits for the server's receipt
	// (seen once in CI). The flags were checked above; finish checks the
	// controller leaves none and every byte arrives.
	if err := n.Bottleneck(0).SetForward(good); err != nil {
		t.Fatal(err)
	}
	events := finish(t, n.Client, token, c, stop)
	// A flag the kernel refused is reported once, not every period while
	// the decision stands.
	for i := 1; i < len(events); i++ {
		a, b := events[i-1], events[i]
		if a.Err != nil && b.Err != nil && a.Err.Error() == b.Err.Error() && !b.Decision.Switched && !b.Decision.Chosen && b.Decision.Trial == a.Decision.Trial {
			t.Fatalf("the same apply error was reported twice in a row without a new decision: %v", b.Err)
		}
	}
}

// End to end, per connection (the userspace path manager, as mptcpd runs
// it): the same decision reaches the kernel as MP_PRIO on this
// connection's subflow alone.
func TestControllerFlagsBadPathPerConnection(t *testing.T) {
	n, c, token := badPaths(t, true, 16*time.Second)
	held, _, stop := controller(t, n.Client, token, pathctl.Auto)
	took := waitFlag(t, n.Client, token, topo.ClientAddr(1), held, true, 12*time.Second)
	t.Logf("the bad path was flagged backup after %v", took.Round(time.Millisecond))
	for _, e := range finish(t, n.Client, token, c, stop) {
		if e.Err != nil {
			t.Errorf("per connection, every subflow can be flagged, yet: %v", e.Err)
		}
	}
}
