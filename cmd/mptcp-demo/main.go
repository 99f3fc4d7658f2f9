// SPDX-License-Identifier: Apache-2.0

// mptcp-demo shows mptcp-cc at work in one command: it builds an emulated
// two-path network (two namespaces joined through a router by a fast
// short path and a slower long one), loads a coupled congestion control,
// runs an MPTCP transfer over both paths and prints the live subflow table
// every second. Everything it created is removed when it ends (or on
// Ctrl-C); an algorithm that was already loaded is used and left alone.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

var app = &cli.App{
	Name:    "mptcp-demo",
	Summary: "mptcp-cc at work in one command: a coupled congestion control on an emulated two-path network",
	Single: &cli.Command{Name: "mptcp-demo", Summary: "run an MPTCP transfer over two emulated paths with a coupled congestion control",
		Help: demoHelp, Flags: demo},
}

const demoHelp = `Builds an emulated two-path network (path 0: 20 Mbit/s, 2x10 ms; path 1:
10 Mbit/s, 2x30 ms), loads the congestion control, runs an MPTCP transfer
over both paths and prints the live subflow table every second. Everything
it created is removed when it ends (or on Ctrl-C); an algorithm that was
already loaded is used and left alone. Needs root.`

func main() { app.Main() }

func demo(fs *flag.FlagSet) cli.Action {
	algo := fs.String("algo", "olia", "coupled congestion control `NAME`: "+strings.Join(cc.Names(), ", "))
	lisa := fs.Bool("lisa", false, "load with LISA linked slow start")
	dur := fs.Duration("for", 20*time.Second, "how long the transfer runs")
	return func(_ []string, _ io.Writer) error {
		a, err := cc.Lookup(*algo)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		return run(a, *lisa, *dur)
	}
}

func run(a cc.Algorithm, lisa bool, dur time.Duration) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Mount bpffs only for the demo if nothing had it mounted, and leave
	// the machine as it was.
	if !bpffsMounted() {
		defer func() { _ = unix.Unmount("/sys/fs/bpf", unix.MNT_DETACH) }()
	}
	name := a.DefaultName()
	if err := cc.Load(a, cc.Options{Params: cc.Params{LISA: lisa, RSFTarget: cc.DefaultRSFTarget}}); err == nil {
		fmt.Printf("loaded %s\n", name)
		defer func() {
			if uerr := cc.Unload(name, ""); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}()
	} else if errors.Is(err, cc.ErrAlreadyLoaded) {
		fmt.Printf("using the %s that is already loaded\n", name)
	} else {
		return err
	}

	fmt.Println("building the network: path 0 = 20 Mbit/s, 2x10 ms; path 1 = 10 Mbit/s, 2x30 ms")
	n, err := topo.Build(topo.Config{
		Prefix: "mpcc-demo",
		Paths:  []int{0, 1},
		Bottlenecks: []topo.Shaping{
			{RateBits: 20e6, Delay: 10 * time.Millisecond, QueueBytes: 50 * 1500},
			{RateBits: 10e6, Delay: 30 * time.Millisecond, QueueBytes: 50 * 1500},
		},
		Subflows: true,
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, n.Close()) }()
	fmt.Printf("namespaces: client %s, router %s, server %s\n", n.Client, n.Router, n.Server)

	srv, err := xfer.Listen(n.Server, netip.AddrPortFrom(topo.ServerAddr, 5201), true)
	if err != nil {
		return err
	}
	defer srv.Close()
	c, err := xfer.Start(xfer.Options{NS: n.Client, Local: topo.ClientAddr(0), Remote: srv.Addr(), MPTCP: true, CC: name, For: dur})
	if err != nil {
		return err
	}
	fmt.Printf("MPTCP transfer %s -> %s with %s for %v (`mptcp-cc subflows` shows the same from another terminal)\n\n",
		c.Local(), srv.Addr(), name, dur)

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	done := make(chan struct{})
	var res xfer.Result
	var werr error
	go func() { res, werr = c.Wait(); close(done) }()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; cleaning up", cli.ErrInterrupted)
		case <-done:
			if werr != nil {
				return werr
			}
			fmt.Printf("\ndone: %.1f MB in %v = %.2f Mbit/s, intact: %v\n",
				float64(res.Delivered)/1e6, res.Duration.Round(time.Millisecond),
				float64(res.Delivered)*8/res.Duration.Seconds()/1e6, res.Intact)
			return nil
		case <-tick.C:
			snap, err := stats.Pinned{}.Read()
			if err != nil {
				return err
			}
			show(snap.Subflows, name)
		}
	}
}

func show(subs []stats.Subflow, name string) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tTOKEN\tSF\tLOCAL\tCWND\tSSTHRESH\tSRTT\tDELIVERED\tRETRANS\tCOUPLED\t\n", time.Now().Format("15:04:05"))
	for _, s := range subs {
		if s.CC != name {
			continue
		}
		fmt.Fprintf(tw, "\t%08x\t%d\t%s\t%d\t%s\t%.1fms\t%d\t%d\t%s=%.3f\t\n", s.Token, s.SubflowID, s.Local.Addr(),
			s.Cwnd, stats.FormatSsthresh(s.Ssthresh), float64(s.SRTT)/1e6, s.Delivered, s.Retrans, s.CoupledName, s.Coupled)
	}
	tw.Flush()
}

func bpffsMounted() bool {
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/bpf", &st) == nil && st.Type == unix.BPF_FS_MAGIC
}
