// SPDX-License-Identifier: Apache-2.0

// mptcp-xfer is the command-line face of lab/xfer, the project's transfer
// tool: a sink server, and a client that sends a number of bytes or for a
// time over MPTCP or TCP with a chosen congestion control and prints what
// the receiver got, as JSON.
//
//	mptcp-xfer server --listen 10.4.0.2:5000 [--mptcp]
//	mptcp-xfer client --connect 10.4.0.2:5000 --bytes 10MB [--cc olia] [--mptcp]
//	mptcp-xfer client --connect 10.4.0.2:5000 --time 30s --bind 10.10.0.1 --mptcp
//
// --ns NAME runs either side inside a named network namespace (the ones
// `ip netns` lists; only the network namespace is entered).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/lab/xfer"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

var app = (&cli.App{
	Name:    "mptcp-xfer",
	Summary: "the project's transfer tool: a checking sink and a sender over MPTCP or TCP",
	Commands: []cli.Command{
		{Name: "server", Summary: "a sink that counts and checks what it receives (prints its address as JSON)",
			Required: []string{"listen"}, Flags: server},
		{Name: "client", Summary: "send --bytes N or for --time D and print what the receiver got, as JSON",
			Required: []string{"connect", "bytes|time"}, Flags: client},
	},
	Footer: "The client's JSON: bytes sent and delivered (as the server counted them), duration, throughput, whether the data arrived intact, the congestion control the socket ran.",
}).WithDocs()

func main() { app.Main() }

func server(fs *flag.FlagSet) cli.Action {
	listen := fs.String("listen", "", "`ADDR:PORT` to listen on (port 0: any)")
	mptcp := fs.Bool("mptcp", false, "listen with IPPROTO_MPTCP (plain TCP clients are accepted too)")
	ns := fs.String("ns", "", "network namespace `NAME` to listen in")
	noVerify := fs.Bool("no-verify", false, "count bytes but skip the byte-by-byte check (for multi-Gbit/s runs)")
	return func(_ []string, stdout io.Writer) error {
		if *listen == "" {
			return cli.Usagef("want --listen ADDR:PORT")
		}
		addr, err := parseAddrPort("--listen", *listen)
		if err != nil {
			return err
		}
		s, err := xfer.ListenWith(*ns, addr, *mptcp, xfer.ServerOptions{NoVerify: *noVerify})
		if err != nil {
			return err
		}
		out, _ := json.Marshal(map[string]any{"listening": s.Addr().String(), "mptcp": *mptcp, "ns": *ns})
		fmt.Fprintln(stdout, string(out))
		sigc := make(chan os.Signal, 1)
		signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
		<-sigc
		done := make(chan struct{})
		go func() { s.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second): // transfers still open: just go
		}
		return nil
	}
}

// parseAddrPort reads an ADDR:PORT flag; the parser's own message
// ("not an ip:port") says neither which flag nor what is wanted.
func parseAddrPort(flag, s string) (netip.AddrPort, error) {
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		return a, fmt.Errorf("%s %q: want ADDR:PORT with a port of 0 to 65535, such as 10.0.0.2:5000 or [2001:db8::2]:5000", flag, s)
	}
	return a, nil
}

// Result is what the client prints.
type Result struct {
	Local          string  `json:"local"`
	Remote         string  `json:"remote"`
	MPTCP          bool    `json:"mptcp"`
	CC             string  `json:"cc"`
	SentBytes      int64   `json:"sent_bytes"`
	DeliveredBytes int64   `json:"delivered_bytes"`
	DurationS      float64 `json:"duration_s"`
	ThroughputMbps float64 `json:"throughput_mbps"`
	Intact         bool    `json:"intact"`
	FirstBad       int64   `json:"first_bad_offset"` // -1: none
}

func client(fs *flag.FlagSet) cli.Action {
	connect := fs.String("connect", "", "server's `ADDR:PORT`")
	bytesF := fs.String("bytes", "", "send this much, a `SIZE` such as 10MB, 1MiB or 500000")
	dur := fs.Duration("time", 0, "send for this long, such as 30s")
	cc := fs.String("cc", "", "congestion control `NAME` of the socket (default: the namespace's)")
	mptcp := fs.Bool("mptcp", false, "use MPTCP (IPPROTO_MPTCP)")
	bind := fs.String("bind", "", "source `ADDR` (the path the connection starts on)")
	ns := fs.String("ns", "", "network namespace `NAME` to run in")
	return func(_ []string, stdout io.Writer) error {
		if *connect == "" || (*bytesF == "") == (*dur == 0) {
			return cli.Usagef("want --connect ADDR:PORT and one of --bytes or --time")
		}
		if *dur < 0 {
			return fmt.Errorf("--time %v: want a positive duration such as 30s", *dur)
		}
		remote, err := parseAddrPort("--connect", *connect)
		if err != nil {
			return err
		}
		if *cc != "" && !kernel.HasCongestionControl(*cc) {
			return fmt.Errorf("--cc %q is not a registered congestion control (%s lists them; load this project's with `mptcp-cc load`)", *cc, kernel.AvailablePath)
		}
		o := xfer.Options{NS: *ns, Remote: remote, MPTCP: *mptcp, CC: *cc, For: *dur}
		if *bytesF != "" {
			if o.Bytes, err = scenario.ParseSize(*bytesF); err != nil || o.Bytes <= 0 {
				return fmt.Errorf("--bytes %q: want a positive size", *bytesF)
			}
		}
		if *bind != "" {
			if o.Local, err = netip.ParseAddr(*bind); err != nil {
				return fmt.Errorf("--bind %q: want an address of this host, such as 10.0.0.1 or 2001:db8::1", *bind)
			}
		}
		res, err := xfer.Run(o)
		if err != nil {
			return err
		}
		r := Result{Local: res.Local.String(), Remote: remote.String(), MPTCP: *mptcp, CC: res.CC,
			SentBytes: res.Sent, DeliveredBytes: res.Delivered, DurationS: res.Duration.Seconds(), Intact: res.Intact, FirstBad: res.FirstBad}
		if res.Duration > 0 {
			r.ThroughputMbps = float64(res.Delivered) * 8 / res.Duration.Seconds() / 1e6
		}
		if err := cli.WriteJSON(stdout, r); err != nil {
			return err
		}
		if !res.Intact {
			return errors.New("the data did not arrive intact")
		}
		return nil
	}
}
