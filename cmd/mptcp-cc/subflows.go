// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

func cmdSubflows(fs *flag.FlagSet) cli.Action {
	asJSON := fs.Bool("json", false, "JSON output (one array per refresh)")
	watch := fs.Duration("watch", 0, "refresh every DURATION until interrupted (0: once)")
	root := pinRootFlag(fs)
	schedRoot := schedRootFlag(fs, "sched-bpffs")
	return func(_ []string, out io.Writer) error {
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		if err := checkPinRootFlag("--sched-bpffs", *schedRoot, false); err != nil {
			return err
		}
		if *watch < 0 {
			return fmt.Errorf("--watch %v: want a positive refresh interval such as 1s (0, the default: show once)", *watch)
		}
		for {
			snap, err := stats.Pinned{Root: *root, SchedRoot: *schedRoot, LiveFlags: true}.Read()
			if err != nil {
				return needsRoot(err, *root)
			}
			unjoined := len(stats.JoinSched(snap.Subflows, snap.Schedulers, snap.SchedSubflows))
			subs := snap.Subflows
			if *asJSON {
				if subs == nil {
					subs = []stats.Subflow{}
				}
				if err := json.NewEncoder(out).Encode(subs); err != nil {
					return err
				}
			} else {
				if *watch > 0 {
					fmt.Fprint(out, "\033[H\033[2J")
				}
				if err := printSubflows(out, subs, unjoined); err != nil {
					return err
				}
			}
			if *watch <= 0 {
				return nil
			}
			time.Sleep(*watch)
		}
	}
}

// printSubflows writes the table; the scheduler's columns appear only when
// one of mptcp-cc's packet schedulers schedules a listed subflow. unjoined
// counts the scheduler records of subflows the table cannot list.
func printSubflows(out io.Writer, subs []stats.Subflow, unjoined int) error {
	if len(subs) == 0 {
		fmt.Fprintln(out, "no subflows use a loaded mptcp-cc congestion control")
	} else if err := subflowTable(out, subs); err != nil {
		return err
	}
	if unjoined > 0 {
		fmt.Fprintf(out, "%d more subflow record(s) of the loaded packet schedulers: subflows that run no mptcp-cc congestion control, or closed ones; `mptcp-cc sched list` has the schedulers' totals\n", unjoined)
	}
	return nil
}

func subflowTable(out io.Writer, subs []stats.Subflow) error {
	scheduled := false
	for i := range subs {
		scheduled = scheduled || subs[i].Sched != nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "TOKEN\tSF\tCC\tLOCAL\tREMOTE\tSTATE\tCWND\tSSTHRESH\tSRTT\tMINRTT\tINFLIGHT\tDELIVERED\tLOST\tRETRANS\tCOUPLED\tPATHS\t")
	if scheduled {
		fmt.Fprint(tw, "SCHED\tSENDS\tREINJECTS\tBURST\t")
	}
	fmt.Fprintln(tw)
	for _, s := range subs {
		token := "-"
		if s.MPTCP {
			token = fmt.Sprintf("%08x", s.Token)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s=%.3f\t%d\t",
			token, s.SubflowID, s.CC, s.Local, s.Remote, subflowState(s), s.Cwnd, stats.FormatSsthresh(s.Ssthresh),
			ms(s.SRTT), minRTT(s.MinRTT), s.InFlight, s.Delivered, s.Lost, s.Retrans, s.CoupledName, s.Coupled, s.Paths)
		if sc := s.Sched; sc != nil {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t", sc.Name, sc.Sends, sc.Retrans, schedBytes(sc.BurstBytes))
		} else if scheduled {
			fmt.Fprint(tw, "-\t\t\t\t")
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// subflowState is the CA state with the backup flags: backup (this side
// flagged it: MP_PRIO sent, or its endpoint's flag), peer-backup (the peer
// did).
func subflowState(s stats.Subflow) string {
	st := s.CAState
	if s.Backup {
		st += ",backup"
	}
	if s.BackupRemote {
		st += ",peer-backup"
	}
	return st
}

// schedBytes shortens a byte count for the tables.
func schedBytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%dB", b)
}

// minRTT is "-" until the kernel has a sample: its min_rtt filter starts
// at ~0U microseconds.
func minRTT(d time.Duration) string {
	if d >= time.Duration(math.MaxUint32)*time.Microsecond {
		return "-"
	}
	return ms(d)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
