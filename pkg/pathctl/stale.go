// SPDX-License-Identifier: Apache-2.0

package pathctl

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
)

// ClearLeftFlags finds the state files in dir of controller processes
// that are gone (killed, so they could not clear what they flagged), and
// clears the backup flag of every in-kernel path manager endpoint they had
// flagged (Apply endpoint) that is still flagged; then it removes the
// files. A process that stopped cleanly removed its file and its flags.
// It returns what it cleared, one line each, for the log.
func ClearLeftFlags(dir string) (cleared []string, err error) {
	files, err := stateFiles(dir)
	errs := []error{err}
	for _, f := range files {
		if !f.gone {
			continue // its process still runs
		}
		s, err := readState(f.path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pid, file := f.pid, f.path
		ok := true
		for _, c := range s.Connections {
			if c.Apply != PerEndpoint {
				continue // per-connection flags went with their connection
			}
			for _, sf := range c.Backup {
				local, _, _ := strings.Cut(sf, "->")
				ap, err := netip.ParseAddrPort(local)
				if err != nil {
					continue
				}
				done, err := unflagEndpoint(c.Netns, ap.Addr())
				if err != nil {
					errs = append(errs, fmt.Errorf("clearing the backup flag %s (pid %d) left on %v in %s: %w", s.Program, pid, ap.Addr(), nsName(c.Netns), err))
					ok = false
					continue
				}
				if done {
					cleared = append(cleared, fmt.Sprintf("%s's endpoint %v (left by %s, pid %d)", nsName(c.Netns), ap.Addr(), s.Program, pid))
				}
			}
		}
		if ok {
			_ = os.Remove(file)
		}
	}
	return cleared, errors.Join(errs...)
}

// unflagEndpoint clears the backup flag of the endpoint of addr in ns, if
// it has one; done says whether it did.
func unflagEndpoint(ns string, addr netip.Addr) (done bool, err error) {
	pm, err := mptcpnl.DialNS(ns)
	if err != nil {
		return false, err
	}
	defer pm.Close()
	eps, err := pm.Endpoints()
	if err != nil {
		return false, err
	}
	for _, ep := range eps {
		if ep.Addr == addr && ep.Flags&mptcpnl.FlagBackup != 0 {
			return true, pm.SetEndpointFlags(ep.ID, ep.Flags&^mptcpnl.FlagBackup)
		}
	}
	return false, nil
}
