package main

import (
	"os"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// maxFlagNamespaces bounds the named namespaces whose subflows' backup
// flags the tables read (two sock_diag dumps each per refresh).
const maxFlagNamespaces = 64

// kernelSockets lists the TCP sockets of this network namespace and of
// the named ones (`ip netns list`; the first maxFlagNamespaces by name),
// for stats.JoinKernel: the BPF maps record a subflow's backup flag only
// as it starts, the kernel has it as it is now. A namespace that cannot be
// read is skipped; its subflows keep the map's flag.
func kernelSockets() []sockdiag.Socket {
	names := []string{""}
	if ents, err := os.ReadDir(netns.Dir); err == nil {
		var named []string
		for _, e := range ents {
			named = append(named, e.Name())
		}
		sort.Strings(named)
		names = append(names, named[:min(len(named), maxFlagNamespaces)]...)
	}
	var out []sockdiag.Socket
	for _, ns := range names {
		c, err := sockdiag.DialNS(ns)
		if err != nil {
			continue
		}
		for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
			socks, err := c.TCP(fam, sockdiag.Connected)
			if err == nil {
				out = append(out, socks...)
			}
		}
		c.Close()
	}
	return out
}
