// SPDX-License-Identifier: Apache-2.0

package topo

// The pieces every network is made of: veth pairs, tbf shaping, emulated
// links, and ip commands run in batches inside a namespace.

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/lab/linkem"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// vethPair joins two namespaces with a veth pair, addressed /24 on both
// sides and up. It is created directly inside the namespaces, so nothing
// appears in the host's; noOffload turns TSO/GSO/GRO off so queues and drops
// act on MTU-sized packets, as on a wire.
func vethPair(ns1, dev1 string, a1 netip.Addr, ns2, dev2 string, a2 netip.Addr, noOffload bool) error {
	if err := run("ip", "-n", ns1, "link", "add", dev1, "type", "veth", "peer", "name", dev2, "netns", ns2); err != nil {
		return err
	}
	for _, side := range []struct {
		ns, dev string
		addr    netip.Addr
	}{{ns1, dev1, a1}, {ns2, dev2, a2}} {
		if noOffload {
			if err := netns.Exec(side.ns, "ethtool", "-K", side.dev, "tso", "off", "gso", "off", "gro", "off"); err != nil {
				return err
			}
		}
		if err := ipBatch(side.ns, []string{
			"addr add " + netip.PrefixFrom(side.addr, 24).String() + " dev " + side.dev,
			"link set " + side.dev + " up",
		}); err != nil {
			return err
		}
	}
	return nil
}

// tbf shapes dev's egress in ns. The burst is 4 ms worth, at least four
// packets (enough for the timer granularity at these rates); larger GSO
// packets are segmented by tbf itself.
func tbf(ns, dev string, sh Shaping) error {
	if sh.RateBits == 0 {
		return nil
	}
	limit := sh.QueueBytes
	if limit == 0 {
		limit = 100 * 1514
	}
	burst := uint64(sh.RateBits / 8 / 250)
	if burst < 4*1514 {
		burst = 4 * 1514
	}
	return netns.Exec(ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
		"rate", strconv.FormatUint(sh.RateBits, 10)+"bit",
		"burst", strconv.FormatUint(burst, 10), "limit", strconv.FormatUint(uint64(limit), 10))
}

func startEmulated(name, ns1, dev1 string, a1 netip.Addr, ns2, dev2 string, a2 netip.Addr, sh Shaping) (*linkem.Path, error) {
	queue := int(sh.QueueBytes)
	if queue == 0 {
		queue = 100 * 1500
	}
	return linkem.Start(linkem.PathConfig{
		Name: name, NS1: ns1, NS2: ns2, Dev1: dev1, Dev2: dev2,
		Addr1: netip.PrefixFrom(a1, 24), Addr2: netip.PrefixFrom(a2, 24),
		Forward: linkem.DirectionConfig{
			Rate: int64(sh.RateBits), Delay: sh.Delay, Jitter: sh.Jitter, Overhead: sh.Overhead, Loss: sh.Loss,
			Seed: sh.Seed, QueueBytes: queue, Trace: sh.Trace, AQM: sh.AQM,
		},
		Reverse: linkem.DirectionConfig{Delay: sh.Delay},
	})
}

// ipBatch runs ip commands inside a namespace with one process.
func ipBatch(ns string, cmds []string) error {
	if len(cmds) == 0 {
		return nil
	}
	cmd := exec.Command("ip", "-n", ns, "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s -batch: %w: %s", ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func run(argv ...string) error {
	return netns.Run(argv...)
}
