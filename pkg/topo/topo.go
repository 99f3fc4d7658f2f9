// Package topo builds emulated multipath networks out of network namespaces:
// a client and a server joined through a router by several paths, each path
// crossing one of the router's bottleneck links toward the server.
//
//	client ──path 0── ┐          ┌─bottleneck 0── server
//	       ──path 1── ├─ router ─┤
//	       ──path i── ┘          └─bottleneck j──
//
// Paths that name the same bottleneck share it (a shared bottleneck);
// paths on different bottlenecks are disjoint. Bottlenecks are shaped with
// tbf on the router's egress toward the server, so queues build and drop
// where a real bottleneck router would, not in the sender's own qdisc
// (where TCP small queues would just push back without loss).
//
// Address plan (each namespace has its own tables, so every Net may reuse it):
//
//	path i        client 10.0.i.1/24   router 10.0.i.2/24
//	bottleneck j  router 10.1.j.2/24   server 10.1.j.1/24
//	the server's address for every connection: 10.1.0.1
//
// The router forwards each path's packets onto its bottleneck by source
// address (a routing rule per path); the server answers by destination.
//
// BuildMulti (multi.go) builds the general form the lab uses: several kinds
// of hosts with several instances each (competing users), shared or private
// access links, and several servers each behind its own link.
package topo

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/linkem"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// Shaping of one bottleneck link (toward the server).
//
// Without delay, loss, jitter or a trace, the link is a veth pair shaped by
// the kernel's tbf (rate in bits of Ethernet frames). With any of them it is
// an emulated link (pkg/linkem, TUN devices and a forwarder in this process;
// rate in bits of IP packets), since this kernel has no netem: the data
// direction gets rate, queue, loss and jitter, both directions the delay.
type Shaping struct {
	RateBits   uint64        // bits per second; 0: unshaped
	QueueBytes uint32        // drop-tail queue limit; 0: 100 full-size packets
	Delay      time.Duration // one-way, each direction
	Loss       float64       // random loss probability, data direction
	Jitter     time.Duration // extra random delay, never reordering
	Seed       uint64        // seeds loss and jitter
	Trace      *linkem.Trace // a mahimahi trace instead of RateBits
}

func (s Shaping) emulated() bool {
	return s.Delay > 0 || s.Loss > 0 || s.Jitter > 0 || s.Trace != nil
}

// Config describes a network to build.
type Config struct {
	Prefix      string    // namespace name prefix; a random suffix is added
	Paths       []int     // for each client path, the bottleneck it crosses
	Bottlenecks []Shaping // the router's links toward the server
	// MPTCP endpoints: every path but the first becomes a "subflow"
	// endpoint of the client, so a connection opens one subflow per path.
	Subflows bool
	// NoOffload disables TSO/GSO/GRO on every device, so queues and
	// drops act on MTU-sized packets as on a real wire.
	NoOffload bool
}

// Net is a built network. Close removes all of it.
type Net struct {
	Client, Router, Server string // namespace names
	cfg                    Config
	links                  map[int]*linkem.Path // emulated bottlenecks
}

// ServerAddr is the address clients connect to.
var ServerAddr = netip.MustParseAddr("10.1.0.1")

// ClientAddr is the client's address on path i.
func ClientAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i), 1}) }

func routerPathAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i), 2}) }
func routerBnAddr(j int) netip.Addr   { return netip.AddrFrom4([4]byte{10, 1, byte(j), 2}) }
func serverBnAddr(j int) netip.Addr   { return netip.AddrFrom4([4]byte{10, 1, byte(j), 1}) }

// Suffix returns a random hex string for unique names.
func Suffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Build creates the network. On failure it removes whatever it created.
func Build(cfg Config) (n *Net, err error) {
	if len(cfg.Paths) == 0 || len(cfg.Paths) > 8 {
		return nil, fmt.Errorf("topology needs 1 to 8 paths, got %d", len(cfg.Paths))
	}
	if len(cfg.Bottlenecks) == 0 || len(cfg.Bottlenecks) > 8 {
		return nil, fmt.Errorf("topology needs 1 to 8 bottlenecks, got %d", len(cfg.Bottlenecks))
	}
	for i, j := range cfg.Paths {
		if j < 0 || j >= len(cfg.Bottlenecks) {
			return nil, fmt.Errorf("path %d crosses bottleneck %d, which does not exist", i, j)
		}
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "mpcc"
	}
	id := prefix + "-" + Suffix()
	n = &Net{Client: id + "-c", Router: id + "-r", Server: id + "-s", cfg: cfg, links: map[int]*linkem.Path{}}
	defer func() {
		if err != nil {
			_ = n.Close()
		}
	}()
	for _, ns := range []string{n.Client, n.Router, n.Server} {
		if err := netns.Create(ns); err != nil {
			return nil, err
		}
	}
	for _, cmds := range [][]string{
		{n.Router, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{n.Router, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0"},
		{n.Router, "sysctl", "-qw", "net.ipv4.conf.default.rp_filter=0"},
		{n.Server, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0"},
		{n.Server, "sysctl", "-qw", "net.ipv4.conf.default.rp_filter=0"},
		{n.Client, "sysctl", "-qw", "net.mptcp.enabled=1"},
		{n.Server, "sysctl", "-qw", "net.mptcp.enabled=1"},
	} {
		if err := netns.Exec(cmds[0], cmds[1:]...); err != nil {
			return nil, err
		}
	}

	// Bottleneck links router <-> server.
	for j, sh := range cfg.Bottlenecks {
		rdev, sdev := "b"+strconv.Itoa(j), "s"+strconv.Itoa(j)
		if sh.emulated() {
			if err := n.emulate(j, rdev, sdev, sh); err != nil {
				return nil, err
			}
			continue
		}
		if err := vethPair(n.Router, rdev, routerBnAddr(j), n.Server, sdev, serverBnAddr(j), cfg.NoOffload); err != nil {
			return nil, err
		}
		if err := tbf(n.Router, rdev, sh); err != nil {
			return nil, err
		}
	}
	// Client paths client <-> router.
	for i, j := range cfg.Paths {
		cdev, rdev := "p"+strconv.Itoa(i), "c"+strconv.Itoa(i)
		if err := vethPair(n.Client, cdev, ClientAddr(i), n.Router, rdev, routerPathAddr(i), cfg.NoOffload); err != nil {
			return nil, err
		}
		table := strconv.Itoa(100 + i)
		client := ClientAddr(i).String()
		steps := [][]string{
			// client: leave by the path the source address belongs to
			{n.Client, "ip", "rule", "add", "from", client, "table", table},
			{n.Client, "ip", "route", "add", "default", "via", routerPathAddr(i).String(), "dev", cdev, "table", table},
			// router: a path's packets go out on its bottleneck
			{n.Router, "ip", "rule", "add", "from", client + "/24", "table", table},
			{n.Router, "ip", "route", "add", "10.1.0.0/16", "via", serverBnAddr(j).String(), "dev", "b" + strconv.Itoa(j), "table", table},
			// server: answer a path over the bottleneck it came through
			{n.Server, "ip", "route", "add", netip.PrefixFrom(ClientAddr(i), 24).Masked().String(), "via", routerBnAddr(j).String()},
		}
		if i == 0 {
			steps = append(steps, []string{n.Client, "ip", "route", "add", "default", "via", routerPathAddr(0).String(), "dev", cdev})
		}
		for _, s := range steps {
			if err := netns.Exec(s[0], s[1:]...); err != nil {
				return nil, err
			}
		}
	}
	// The server's main address lives on bottleneck 0; the router reaches
	// it through each path's table, and through the main table otherwise.
	if err := n.mptcpLimits(); err != nil {
		return nil, err
	}
	if cfg.Subflows {
		for i := 1; i < len(cfg.Paths); i++ {
			if err := netns.Exec(n.Client, "ip", "mptcp", "endpoint", "add", ClientAddr(i).String(), "dev", "p"+strconv.Itoa(i), "subflow"); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

func (n *Net) emulate(j int, rdev, sdev string, sh Shaping) error {
	p, err := startEmulated(fmt.Sprintf("bottleneck %d", j), n.Router, rdev, routerBnAddr(j), n.Server, sdev, serverBnAddr(j), sh)
	if err != nil {
		return err
	}
	n.links[j] = p
	return nil
}

func (n *Net) mptcpLimits() error {
	for _, ns := range []string{n.Client, n.Server} {
		if err := netns.Exec(ns, "ip", "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "8"); err != nil {
			return err
		}
	}
	return nil
}

// BottleneckStats returns the counters of bottleneck j toward the server:
// bytes and packets sent on, packets dropped.
func (n *Net) BottleneckStats(j int) (sentBytes, sentPkts, dropped uint64, err error) {
	if p := n.links[j]; p != nil {
		fwd, _ := p.Stats()
		return fwd.DeliveredBytes, fwd.DeliveredPackets, fwd.DroppedLoss + fwd.DroppedQueue + fwd.DroppedError, nil
	}
	out, err := netns.Output(n.Router, "tc", "-s", "qdisc", "show", "dev", "b"+strconv.Itoa(j))
	if err != nil {
		return 0, 0, 0, err
	}
	// " Sent 123 bytes 45 pkt (dropped 6, overlimits 7 requeues 0)"
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(strings.NewReplacer("(", " ", ")", " ", ",", " ").Replace(line))
		if len(f) >= 7 && f[0] == "Sent" {
			sentBytes, _ = strconv.ParseUint(f[1], 10, 64)
			sentPkts, _ = strconv.ParseUint(f[3], 10, 64)
			dropped, _ = strconv.ParseUint(f[6], 10, 64)
			return sentBytes, sentPkts, dropped, nil
		}
	}
	return 0, 0, 0, fmt.Errorf("no tbf counters on b%d", j)
}

// Close removes the namespaces (and with them every device and route).
func (n *Net) Close() error {
	var errs []error
	for _, p := range n.links {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ns := range []string{n.Client, n.Router, n.Server} {
		if err := netns.Delete(ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func run(argv ...string) error {
	return netns.Run(argv...)
}
