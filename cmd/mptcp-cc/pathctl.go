// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/connctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
)

const pathctlHelp = `The path controller chooses, per connection, between multipath mode and
best-path mode (every other subflow flagged backup through MP_PRIO, which
the kernel's default scheduler honours) by measuring the goodput of each,
as PAPD does (docs/pathctl.md). It runs until the connection closes or it
is interrupted, and clears every flag it set before it exits.

--apply connection needs the userspace path manager (net.mptcp.pm_type=1,
as mptcpd runs); --apply endpoint flags the in-kernel path manager's
endpoint, which every connection using it follows, present and future.
auto (the default) is connection under the userspace path manager and
refuses under the in-kernel one: endpoint mode only when asked by name.

While it runs, it publishes what it decided under --state-dir, where
` + "`mptcp-cc top`" + ` reads it (its PATH column). ` + "`mptcp-cc serve`" + ` runs the same
controller on every matching connection (docs/daemon.md, "Path controller").`

func cmdPathctl(fs *flag.FlagSet) cli.Action {
	tokenFlag := fs.String("token", "", "the connection's `TOKEN`, hex, as `ss -Mi` shows it (or `mptcp-cc subflows`, for connections that run one of its CCs)")
	ns := fs.String("netns", "", "named network namespace `NAME` of the connection (`ip netns list`; default: this one)")
	apply := fs.String("apply", "auto", "how flags reach the kernel, `MODE`: auto, connection (userspace PM) or endpoint (in-kernel PM)")
	period := fs.Duration("period", 500*time.Millisecond, "sampling period")
	onStall := fs.String("on-stall", "flag", "answer to a stalled subflow, `ACTION`: flag (backup, as for best-path mode) or reset (close it and open it again, so its queued data goes out on the others; needs the userspace path manager)")
	peeks := fs.Bool("peeks", true, "in best-path mode, peek at backup paths (clear a flag for about one round trip) to notice one that recovered; false: a multipath trial at every hold's end instead")
	prefer := fs.String("prefer", "goodput", "on a tie between the modes, `PREFERENCE`: goodput (the held mode keeps it) or latency (best-path mode takes it: for an application whose rate fits the best path, no data waits in the receive buffer for a slower one)")
	forD := fs.Duration("for", 0, "stop after this long (0: when the connection closes)")
	asJSON := fs.Bool("json", false, "JSON output: one object per decision")
	stateDir := fs.String("state-dir", pathctl.StateDir, "`DIR` where the controller publishes its state for `mptcp-cc top` (empty: nowhere)")
	return func(_ []string, out io.Writer) error {
		if *tokenFlag == "" {
			return cli.Usagef("--token is required (hex, as `mptcp-cc subflows` shows it)")
		}
		token, err := connctl.ParseToken(*tokenFlag)
		if err != nil {
			return err
		}
		how, err := pathctl.ParseApply(*apply)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		resetStalled, err := pathctl.ParseOnStall(*onStall, how)
		if err != nil {
			return cli.Usagef("--on-stall: %v", err)
		}
		preferBest, err := pathctl.ParsePrefer(*prefer)
		if err != nil {
			return cli.Usagef("--%v", err)
		}
		if *period < 10*time.Millisecond || *period > time.Minute {
			return fmt.Errorf("--period %v is out of range: give 10ms to 1m", *period)
		}
		if *forD < 0 {
			return fmt.Errorf("--for %v is negative", *forD)
		}
		if *stateDir != "" && !filepath.IsAbs(*stateDir) {
			return fmt.Errorf("--state-dir %q is not an absolute path", *stateDir)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if *forD > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *forD)
			defer cancel()
		}
		// What top shows of this controller; failing to publish it (not
		// root: /run is not writable) is said once and changes nothing else.
		publish := func(pathctl.ConnState) {}
		if *stateDir != "" {
			// Flags a killed controller left on endpoints go first.
			cleared, err := pathctl.ClearLeftFlags(*stateDir)
			for _, c := range cleared {
				fmt.Fprintf(os.Stderr, "mptcp-cc pathctl: cleared the backup flag a killed controller left on %s\n", c)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "mptcp-cc pathctl: %v\n", err)
			}
			pub := pathctl.NewPublisher(*stateDir, "pathctl", func(err error) {
				fmt.Fprintf(os.Stderr, "mptcp-cc pathctl: not shown in `mptcp-cc top`: %v\n", err)
			})
			defer pub.Close()
			publish = pub.Set
		}
		st := pathctl.NewConnState(*ns, token, time.Now())
		publish(st)
		cfg := pathctl.Config{Period: *period, ResetStalled: resetStalled, PreferBestPath: preferBest}
		if !*peeks {
			cfg.Peek = pathctl.NoPeeks
		}
		err = pathctl.Run(ctx, pathctl.Options{
			NS: *ns, Token: token, Apply: how, Config: cfg,
			Event: func(e pathctl.Event) {
				writeEvent(out, e, *asJSON)
				st.Update(e)
				publish(st)
			},
		})
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
		return err
	}
}

func writeEvent(out io.Writer, e pathctl.Event, asJSON bool) {
	d := e.Decision
	if asJSON {
		type doc struct {
			Time   time.Time `json:"time"`
			Token  string    `json:"token"`
			Apply  string    `json:"apply"`
			Mode   string    `json:"mode"`
			Trial  bool      `json:"trial"`
			Best   string    `json:"best,omitempty"`
			Backup []string  `json:"backup"`
			Reason string    `json:"reason"`
			Error  string    `json:"error,omitempty"`
		}
		v := doc{Time: e.At, Token: fmt.Sprintf("%08x", e.Token), Apply: string(e.Apply), Mode: d.Mode.String(), Trial: d.Trial, Reason: d.Reason, Backup: []string{}}
		if d.Mode == pathctl.BestPath {
			v.Best = d.Best.String()
		}
		for _, b := range d.Backup {
			v.Backup = append(v.Backup, b.String())
		}
		if e.Err != nil {
			v.Error = e.Err.Error()
		}
		_ = cli.WriteJSON(out, v)
		return
	}
	line := fmt.Sprintf("%s %08x %s", e.At.Format("15:04:05.000"), e.Token, d.Mode)
	if d.Trial {
		line += " (trial)"
	}
	if d.Mode == pathctl.BestPath {
		line += " on " + d.Best.String()
	}
	line += ": " + d.Reason
	if e.Err != nil {
		line += "; FAILED to apply: " + e.Err.Error()
	}
	fmt.Fprintln(out, line)
}
