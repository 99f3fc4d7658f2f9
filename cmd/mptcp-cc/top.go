// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/events"
	"github.com/mptcp-cc/mptcp-cc/pkg/pathctl"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

func cmdTop(fs *flag.FlagSet) cli.Action {
	sortBy := fs.String("sort", "rate", "order of the connections, `KEY`: "+strings.Join(events.SortKeys, ", "))
	once := fs.Bool("once", false, "print one frame and exit (waits one --interval to compute rates)")
	asJSON := fs.Bool("json", false, "JSON output: one object per frame, one per line")
	interval := fs.Duration("interval", time.Second, "refresh interval")
	netns := fs.String("netns", "", "follow the mptcp_pm events of this named network namespace `NAME` (default: this process's)")
	noEvents := fs.Bool("no-events", false, "do not subscribe to mptcp_pm events (no ids, lifetimes or closed connections)")
	keepClosed := fs.Int("closed", 5, "recently closed connections to show")
	pathState := fs.String("pathctl-state", pathctl.StateDir, "`DIR` where path controllers (serve, pathctl) publish what they control")
	root := pinRootFlag(fs)
	schedRoot := schedRootFlag(fs, "sched-bpffs")
	return func(_ []string, out io.Writer) error {
		if err := events.SortConns(nil, *sortBy); err != nil {
			return cli.Usagef("--sort: %v", err)
		}
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		if err := checkPinRootFlag("--sched-bpffs", *schedRoot, false); err != nil {
			return err
		}
		if *keepClosed < 0 {
			return fmt.Errorf("--closed %d: want how many closed connections to show, 0 or more", *keepClosed)
		}
		if *interval < 10*time.Millisecond {
			return fmt.Errorf("--interval %v is too short (at least 10ms)", *interval)
		}
		if !filepath.IsAbs(*pathState) {
			return fmt.Errorf("--pathctl-state %q is not an absolute path", *pathState)
		}
		// Fail early with the map error (not root, nothing loaded ...).
		src := stats.Pinned{Root: *root, SchedRoot: *schedRoot, LiveFlags: true}
		if _, err := src.Read(); err != nil {
			return needsRoot(err, *root)
		}

		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()

		var tracker *events.Tracker
		var eventsErr error
		if !*noEvents {
			tracker = events.NewTracker(max(*keepClosed, 0))
			if _, err := tracker.Watch(ctx, *netns); err != nil {
				eventsErr = err
				tracker = nil
				if *netns != "" {
					return fmt.Errorf("--netns %s: %w", *netns, err)
				}
			}
		}

		tty := !*asJSON && !*once && topIsTerminal(out)
		if tty {
			fmt.Fprint(out, "\033[?25l") // hide the cursor while redrawing
			defer fmt.Fprint(out, "\033[?25h")
		}
		var sampler events.Sampler
		enc := json.NewEncoder(out)
		first := true
		for {
			snap, err := src.Read()
			if err != nil {
				return err
			}
			subs := snap.Subflows
			var st *events.State
			if tracker != nil {
				s := tracker.Snapshot()
				st = &s
			}
			frame := sampler.Frame(subs, st, time.Now())
			for _, l := range snap.Loaded {
				if l.Untracked > 0 {
					if frame.Untracked == nil {
						frame.Untracked = map[string]uint64{}
					}
					frame.Untracked[l.Name] = l.Untracked
				}
			}
			if tracker != nil {
				frame.EventsNetns = topNSLabel(*netns)
			}
			// A state file that does not parse (a writer of another
			// version) only costs its connections' PATH cells.
			states, _ := pathctl.ReadStates(*pathState)
			frame.JoinPathctl(states)
			if err := events.SortConns(frame.Connections, *sortBy); err != nil {
				return err
			}
			if len(frame.Closed) > *keepClosed {
				frame.Closed = frame.Closed[:max(*keepClosed, 0)]
			}
			// --once waits for a second sample so rates are known.
			if !(*once && first) {
				if *asJSON {
					if err := enc.Encode(frame); err != nil {
						return err
					}
				} else {
					var b bytes.Buffer
					if tty {
						b.WriteString("\033[H")
					}
					height := 0
					if tty {
						height = topTerminalRows(out)
					}
					renderTop(&b, frame, *sortBy, *interval, eventsErr, height, tty)
					if tty {
						b.WriteString("\033[J")
					}
					if _, err := out.Write(b.Bytes()); err != nil {
						return err
					}
				}
				if *once {
					return nil
				}
			}
			first = false
			select {
			case <-ctx.Done():
				if tty {
					fmt.Fprintln(out)
				}
				return nil
			case <-time.After(*interval):
			}
		}
	}
}

func topNSLabel(ns string) string {
	if ns == "" {
		return "(own)"
	}
	return ns
}

func topIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func topTerminalRows(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
			return int(ws.Row)
		}
	}
	return 0
}

// renderTop draws one frame as text. height > 0 truncates the table to fit.
func renderTop(w *bytes.Buffer, f events.Frame, sortBy string, interval time.Duration, eventsErr error, height int, clearLines bool) {
	eol := "\n"
	if clearLines {
		eol = "\033[K\n" // erase what a longer previous line left
	}
	fmt.Fprintf(w, "mptcp-cc top  %s  every %v  sort %s  %d connection(s), %d subflow(s)%s",
		f.Time.Format("15:04:05"), interval, sortBy, len(f.Connections), f.Subflows, eol)
	switch {
	case eventsErr != nil:
		fmt.Fprintf(w, "mptcp_pm events: unavailable (%v)%s", eventsErr, eol)
	case f.Events != nil:
		var parts []string
		for _, k := range []string{"CREATED", "ESTABLISHED", "CLOSED", "SUB_ESTABLISHED", "SUB_CLOSED", "ANNOUNCED", "REMOVED", "SUB_PRIORITY"} {
			if v := f.Events[k]; v > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", strings.ToLower(k), v))
			}
		}
		if len(parts) == 0 {
			parts = []string{"none yet"}
		}
		fmt.Fprintf(w, "mptcp_pm events in netns %s since %s: %s%s", f.EventsNetns, f.EventsSince.Format("15:04:05"), strings.Join(parts, ", "), eol)
	}
	if len(f.Untracked) > 0 {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(f.Untracked)) {
			parts = append(parts, fmt.Sprintf("%s %d", name, f.Untracked[name]))
		}
		fmt.Fprintf(w, "not shown: subflows that found the subflows map full since load (mptcp-cc load --max-subflows): %s%s", strings.Join(parts, ", "), eol)
	}
	w.WriteString(eol)

	// The scheduler's columns only when one of ours schedules a connection.
	scheduled := false
	for _, c := range f.Connections {
		for _, s := range c.Subflows {
			scheduled = scheduled || s.Sched != nil
		}
	}
	// The path controller's column only when one controls a connection.
	controlled := false
	for _, c := range f.Connections {
		controlled = controlled || c.PathCtl != nil
	}
	var tb bytes.Buffer
	tw := tabwriter.NewWriter(&tb, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "TOKEN/SF\tCC\tLOCAL\tREMOTE\tIDS\tSTATE\tCWND\tSSTHRESH\tSRTT\tRATE\tLOSS\tLOST\tRETRANS\tCOUPLED\tAGE\t")
	if controlled {
		fmt.Fprint(tw, "PATH\t")
	}
	if scheduled {
		fmt.Fprint(tw, "SCHED\tPICKS\tBURST\t")
	}
	fmt.Fprintln(tw)
	rows := 1
	for _, c := range f.Connections {
		token := c.Token
		if token == "" {
			token = "(tcp)"
		}
		srtt := topMs(c.MinSRTT)
		if c.MaxSRTT != c.MinSRTT {
			srtt = fmt.Sprintf("%s-%s", topTrimMs(c.MinSRTT), topMs(c.MaxSRTT))
		}
		subs := fmt.Sprintf("%d sf", len(c.Subflows))
		if c.SubflowsSeen > len(c.Subflows) {
			subs = fmt.Sprintf("%d/%d sf", len(c.Subflows), c.SubflowsSeen)
		}
		if c.Token != "" {
			subs += fmt.Sprintf(", %d coupled", c.CoupledPaths)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t%d\t\t%s\t%s\t\t%d\t%d\t%s\t%s\t",
			token, c.CC, subs, c.Cwnd, srtt, topRate(c.Rate), c.Lost, c.Retrans, topCoupled(c.CoupledName, c.Coupled), topAge(c.Created, f.Time))
		if controlled {
			fmt.Fprint(tw, topPath(c), "\t")
		}
		if scheduled {
			fmt.Fprint(tw, topConnSched(c))
		}
		fmt.Fprintln(tw)
		rows++
		for i, s := range c.Subflows {
			branch := "├"
			if i == len(c.Subflows)-1 {
				branch = "└"
			}
			ids := "-"
			if s.MPTCP {
				ids = fmt.Sprintf("%d/%d", s.LocalID, s.RemoteID)
			}
			state := subflowState(s.Subflow)
			fmt.Fprintf(tw, " %s sf %d\t\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t",
				branch, s.SubflowID, s.Local, s.Remote, ids, state, s.Cwnd, stats.FormatSsthresh(s.Ssthresh), topMs(s.SRTT.Seconds()),
				topRate(s.Rate), topLoss(s.LossRatio), s.Lost, s.Retrans, topCoupled("", s.Coupled), topAge(s.Established, f.Time))
			if controlled {
				fmt.Fprint(tw, "\t")
			}
			if sc := s.Sched; sc != nil {
				fmt.Fprintf(tw, "\t%d\t%s\t", sc.Sends+sc.Retrans, schedBytes(sc.BurstBytes))
			} else if scheduled {
				fmt.Fprint(tw, "\t-\t\t")
			}
			fmt.Fprintln(tw)
			rows++
		}
	}
	if len(f.Connections) == 0 {
		fmt.Fprintln(tw, "(no connection runs a loaded mptcp-cc congestion control)\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t")
	}
	_ = tw.Flush()
	lines := strings.Split(strings.TrimSuffix(tb.String(), "\n"), "\n")
	budget := len(lines)
	if height > 0 {
		budget = max(height-4-min(len(f.Closed), 5)-2, 2)
	}
	for i, l := range lines {
		if i >= budget {
			fmt.Fprintf(w, "... %d more line(s); enlarge the terminal or use --json%s", len(lines)-budget, eol)
			break
		}
		w.WriteString(strings.TrimRight(l, " "))
		w.WriteString(eol)
	}

	if len(f.PathctlUnlisted) > 0 {
		w.WriteString(eol)
		fmt.Fprintf(w, "path controller, connections running no mptcp-cc congestion control:%s", eol)
		var pb bytes.Buffer
		pw := tabwriter.NewWriter(&pb, 0, 4, 2, ' ', 0)
		fmt.Fprintln(pw, "TOKEN\tNETNS\tPATH\tSWITCHES\tSINCE\tREASON\t")
		for _, c := range f.PathctlUnlisted {
			fmt.Fprintf(pw, "%s\t%s\t%s\t%d\t%s\t%s\t\n", c.Token, topNSLabel(c.Netns), topPathState(c, nil), c.Switches, topAge(c.Since, f.Time), c.Reason)
		}
		_ = pw.Flush()
		topLines(w, pb.String(), eol)
	}

	if len(f.Closed) > 0 {
		w.WriteString(eol)
		fmt.Fprintf(w, "recently closed (mptcp_pm events):%s", eol)
		var cb bytes.Buffer
		cw := tabwriter.NewWriter(&cb, 0, 4, 2, ' ', 0)
		fmt.Fprintln(cw, "TOKEN\tLOCAL\tREMOTE\tSUBFLOWS\tLIFETIME\tCLOSED\t")
		closed := append([]events.Conn(nil), f.Closed...)
		sort.SliceStable(closed, func(i, j int) bool { return closed[i].Closed.After(closed[j].Closed) })
		for _, c := range closed {
			life := "-"
			if !c.Created.IsZero() {
				life = c.Closed.Sub(c.Created).Round(time.Millisecond).String()
			}
			fmt.Fprintf(cw, "%08x\t%s\t%s\t%d\t%s\t%s ago\t\n", c.Token, c.Local, c.Remote, len(c.Subflows), life, f.Time.Sub(c.Closed).Round(time.Second))
		}
		_ = cw.Flush()
		topLines(w, cb.String(), eol)
	}
}

// topLines writes a flushed table's lines without their trailing blanks.
func topLines(w *bytes.Buffer, table, eol string) {
	for _, l := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		w.WriteString(strings.TrimRight(l, " "))
		w.WriteString(eol)
	}
}

// topPath is a connection's PATH cell: what the path controller holding
// it last decided, or "-".
func topPath(c events.ConnRow) string {
	if c.PathCtl == nil {
		return "-"
	}
	return topPathState(*c.PathCtl, &c)
}

// topPathState says a controller's mode: multipath, best-path on the kept
// subflow (by kernel subflow id when the row has it), "trial:" before
// either while it is tried, and "!" after it while the kernel refuses a
// flag.
func topPathState(p pathctl.ConnState, row *events.ConnRow) string {
	s := p.Mode
	if p.Mode == pathctl.BestPath.String() && p.Best != "" {
		on := p.Best
		if row != nil {
			if sf := row.SubflowOf(p.Best); sf != nil {
				on = fmt.Sprintf("sf %d", sf.SubflowID)
			}
		}
		s += " " + on
	}
	if p.Trial {
		s = "trial: " + s
	}
	if p.Error != "" {
		s += " !"
	}
	return s
}

// topConnSched is a connection's scheduler cells: its scheduler's name
// and what it gave the connection's subflows in all.
func topConnSched(c events.ConnRow) string {
	name := ""
	var picks, burst uint64
	for _, s := range c.Subflows {
		if sc := s.Sched; sc != nil {
			if name != "" && name != sc.Name {
				name += "," + sc.Name
			} else if name == "" {
				name = sc.Name
			}
			picks += sc.Sends + sc.Retrans
			burst += sc.BurstBytes
		}
	}
	if name == "" {
		return "-\t\t\t"
	}
	return fmt.Sprintf("%s\t%d\t%s\t", name, picks, schedBytes(burst))
}

func topMs(sec float64) string { return fmt.Sprintf("%.1fms", sec*1e3) }

func topTrimMs(sec float64) string { return fmt.Sprintf("%.1f", sec*1e3) }

func topRate(bytesPerSec float64) string {
	if bytesPerSec < 0 {
		return "-"
	}
	bits := bytesPerSec * 8
	switch {
	case bits >= 1e9:
		return fmt.Sprintf("%.2fGbit/s", bits/1e9)
	case bits >= 1e6:
		return fmt.Sprintf("%.1fMbit/s", bits/1e6)
	case bits >= 1e3:
		return fmt.Sprintf("%.1fkbit/s", bits/1e3)
	}
	return fmt.Sprintf("%.0fbit/s", bits)
}

func topLoss(r float64) string {
	if r < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", r*100)
}

func topCoupled(name string, v float64) string {
	if name == "" {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%s=%.3f", name, v)
}

func topAge(since, now time.Time) string {
	if since.IsZero() {
		return "-"
	}
	d := now.Sub(since)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
