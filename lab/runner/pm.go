// SPDX-License-Identifier: Apache-2.0

package runner

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mptcp-cc/mptcp-cc/lab/mptcpd"
	"github.com/mptcp-cc/mptcp-cc/lab/scenario"
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
)

// pathManagers are the mptcpd processes of a network: one in every
// instance of each host with path_manager: mptcpd. Safe for concurrent use
// (late joins start theirs from a goroutine).
type pathManagers struct {
	mu      sync.Mutex
	daemons []*mptcpd.Daemon
}

// start runs mptcpd in every instance of host h, each logging to
// mptcpd-NAMESPACE.log in dir, and returns once every instance has its
// endpoints, so connections opened afterwards get their subflows at once.
// It returns the commands it ran.
func (pm *pathManagers) start(sc *scenario.Scenario, n *topo.Multi, h int, dir string) ([]string, error) {
	host := sc.Hosts[h]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var cmds []string
	for inst, ns := range n.Hosts[h] {
		d, err := mptcpd.Start(mptcpdOptions(host, ns, dir))
		if err != nil {
			return cmds, fmt.Errorf("host %s: %w", host.Name, err)
		}
		pm.mu.Lock()
		pm.daemons = append(pm.daemons, d)
		pm.mu.Unlock()
		cmds = append(cmds, d.Command())
		var addrs []netip.Addr
		for i := range host.Paths {
			addrs = append(addrs, n.HostAddr(h, inst, i))
		}
		if _, err := mptcpd.WaitEndpoints(ns, addrs, 5*time.Second); err != nil {
			return cmds, fmt.Errorf("host %s: %w; mptcpd's log (%s):\n%s", host.Name, err, d.LogPath, d.Log())
		}
	}
	return cmds, nil
}

// stop ends every daemon; it returns the commands equivalent to it.
func (pm *pathManagers) stop() ([]string, error) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	var cmds []string
	var errs []error
	for _, d := range pm.daemons {
		cmds = append(cmds, fmt.Sprintf("at cleanup: kill -TERM %d  # mptcpd in %s", d.Pid(), d.NS))
		errs = append(errs, d.Stop())
	}
	pm.daemons = nil
	return cmds, errors.Join(errs...)
}

// mptcpdOptions runs addr_adv with the flags endpoints: names, logging to
// dir.
func mptcpdOptions(host scenario.Host, ns, dir string) mptcpd.Options {
	flags := []string{"subflow"}
	if host.Endpoints == "fullmesh" {
		flags = append(flags, "fullmesh")
	}
	return mptcpd.Options{NS: ns, AddrFlags: flags, LogPath: filepath.Join(dir, "mptcpd-"+ns+".log")}
}

// usesMptcpd reports whether a host's endpoints come from mptcpd.
func usesMptcpd(h scenario.Host) bool { return h.PathManager == "mptcpd" }
