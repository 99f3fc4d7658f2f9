package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

func cmdSubflows(fs *flag.FlagSet) cli.Action {
	asJSON := fs.Bool("json", false, "JSON output (one array per refresh)")
	watch := fs.Duration("watch", 0, "refresh every DURATION until interrupted (0: once)")
	root := pinRootFlag(fs)
	return func(_ []string, out io.Writer) error {
		if err := checkPinRoot(*root, false); err != nil {
			return err
		}
		if *watch < 0 {
			return fmt.Errorf("--watch %v: want a positive refresh interval such as 1s (0, the default: show once)", *watch)
		}
		for {
			snap, err := stats.Pinned{Root: *root}.Read()
			if err != nil {
				return needsRoot(err, *root)
			}
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
				if err := printSubflows(out, subs); err != nil {
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

func printSubflows(out io.Writer, subs []stats.Subflow) error {
	if len(subs) == 0 {
		fmt.Fprintln(out, "no subflows use a loaded mptcp-cc congestion control")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TOKEN\tSF\tCC\tLOCAL\tREMOTE\tSTATE\tCWND\tSSTHRESH\tSRTT\tMINRTT\tINFLIGHT\tDELIVERED\tLOST\tRETRANS\tCOUPLED\t")
	for _, s := range subs {
		token := "-"
		if s.MPTCP {
			token = fmt.Sprintf("%08x", s.Token)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s=%.3f\t\n",
			token, s.SubflowID, s.CC, s.Local, s.Remote, s.CAState, s.Cwnd, stats.FormatSsthresh(s.Ssthresh),
			ms(s.SRTT), ms(s.MinRTT), s.InFlight, s.Delivered, s.Lost, s.Retrans, s.CoupledName, s.Coupled)
	}
	return tw.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
