// SPDX-License-Identifier: Apache-2.0

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
//	the server    10.1.0.1, and 10.1.j.1 for every bottleneck j
//	the server's address for every connection: 10.1.0.1
//
// The router forwards each path's packets onto its bottleneck by source
// address (a routing rule per path); the server answers by destination.
//
// Build is a preset of BuildMulti (multi.go), the general form the lab uses:
// several kinds of hosts with several instances each (competing users),
// shared or private access links, and several servers each behind its own
// link. In Build's network the router is BuildMulti's access router, the
// bottlenecks its access links, and the core router joins them to the
// server over an unshaped link.
package topo

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
)

// Shaping of one bottleneck link (toward the server).
//
// Without delay, loss, jitter, a trace or an AQM, the link is a veth pair
// shaped by the kernel's tbf (rate in bits of Ethernet frames). With any of
// them it is an emulated link (lab/linkem, TUN devices and a forwarder in
// this process; rate in bits of IP packets), since this kernel has no
// netem, red, codel or fq_codel: the data direction gets rate, queue, AQM,
// loss and jitter, both directions the delay.
type Shaping struct {
	RateBits   uint64        // bits per second; 0: unshaped
	QueueBytes uint32        // queue limit; 0: 100 full-size packets
	Delay      time.Duration // one-way, each direction
	Loss       float64       // random loss probability, data direction
	Jitter     time.Duration // extra random delay, never reordering
	Overhead   time.Duration // random delay before the queue (linkem.DirectionConfig.Overhead)
	Seed       uint64        // seeds loss and jitter
	Trace      *linkem.Trace // a mahimahi trace instead of RateBits
	AQM        linkem.AQM    // the queue's discipline (QueueBytes is its hard limit); zero: drop-tail
}

func (s Shaping) emulated() bool {
	return s.Delay > 0 || s.Loss > 0 || s.Jitter > 0 || s.Overhead > 0 || s.Trace != nil || s.AQM.Kind != linkem.DropTail
}

// Config describes a network to build.
type Config struct {
	Prefix      string    // namespace name prefix; a random suffix is added
	Paths       []int     // for each client path, the bottleneck it crosses
	Bottlenecks []Shaping // the router's links toward the server
	// MPTCP endpoints: every path but the first becomes a "subflow"
	// endpoint of the client, so a connection opens one subflow per path.
	Subflows bool
	// Backup marks paths whose endpoint gets the backup flag (MP_PRIO):
	// the kernel's default scheduler sends on their subflows only when no
	// other subflow is usable. Needs Subflows (path 0 has no endpoint).
	Backup []bool
	// NoOffload disables TSO/GSO/GRO on every device, so queues and
	// drops act on MTU-sized packets as on a real wire.
	NoOffload bool
}

// Net is a built network. Close removes all of it.
type Net struct {
	Client, Router, Server string // namespace names; Router holds the bottlenecks
	m                      *Multi
}

// ServerAddr is the address clients connect to.
var ServerAddr = netip.MustParseAddr("10.1.0.1")

// ClientAddr is the client's address on path i.
func ClientAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i), 1}) }

// buildPlan keeps Build's address plan on BuildMulti's network: the access
// router is Build's router (path i on 10.0.i.0/24), the bottlenecks are the
// access links (on 10.2.j.0/24, which no caller sees), and the server
// answers on 10.1.j.1 for every bottleneck j, as it did when it sat at the
// end of each of them.
func buildPlan(bottlenecks int) *plan {
	return &plan{
		host:   func(_, i int) netip.Addr { return ClientAddr(i) },
		raHost: func(_, i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i), 2}) },
		raLink: func(j int) netip.Addr { return netip.AddrFrom4([4]byte{10, 2, byte(j), 1}) },
		rcLink: func(j int) netip.Addr { return netip.AddrFrom4([4]byte{10, 2, byte(j), 2}) },
		rcSrv:  func(int) netip.Addr { return netip.AddrFrom4([4]byte{10, 1, 0, 2}) },
		server: func(int) netip.Addr { return ServerAddr },
		serverExtra: func(int) []netip.Addr {
			var out []netip.Addr
			for j := 1; j < bottlenecks; j++ {
				out = append(out, netip.AddrFrom4([4]byte{10, 1, byte(j), 1}))
			}
			return out
		},
	}
}

// Suffix returns a random hex string for unique names.
func Suffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Build creates the network: a preset of BuildMulti with one host (the
// client), one access link per bottleneck and one unshaped server link.
// On failure it removes whatever it created.
func Build(cfg Config) (*Net, error) {
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
	links := make([]LinkConfig, len(cfg.Bottlenecks))
	for j, sh := range cfg.Bottlenecks {
		links[j] = LinkConfig{Name: "bottleneck " + strconv.Itoa(j), Shaping: sh}
	}
	endpoints := "none"
	if cfg.Subflows {
		endpoints = "subflow"
	}
	m, err := BuildMulti(MultiConfig{
		Prefix:    cfg.Prefix,
		Hosts:     []HostConfig{{Name: "client", Paths: cfg.Paths, Endpoints: endpoints, Backup: cfg.Backup}},
		Links:     links,
		Servers:   []ServerConfig{{Name: "server"}},
		NoOffload: cfg.NoOffload,
		plan:      buildPlan(len(cfg.Bottlenecks)),
	})
	if err != nil {
		return nil, err
	}
	return &Net{Client: m.Hosts[0][0], Router: m.RouterA, Server: m.Servers[0], m: m}, nil
}

// BottleneckStats returns the counters of bottleneck j toward the server:
// bytes and packets sent on, packets dropped.
func (n *Net) BottleneckStats(j int) (sentBytes, sentPkts, dropped uint64, err error) {
	c, err := n.m.AccessLinkStats(j)
	return c.SentBytes, c.SentPackets, c.Dropped, err
}

// Close removes the namespaces (and with them every device and route).
func (n *Net) Close() error { return n.m.Close() }

// Bottleneck returns the emulated link of bottleneck j (lab/linkem), to
// change its rate, delay or loss while traffic runs; nil when the
// bottleneck is a plain shaped veth (no delay, loss, jitter or trace).
func (n *Net) Bottleneck(j int) *linkem.Path {
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	return n.m.accessEm[j]
}
