// SPDX-License-Identifier: Apache-2.0

package pathctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
)

// ClearLeftFlags finds the state files in dir of controller processes
// that are gone (killed, so they could not clear what they flagged), and
// clears the backup flag of every in-kernel path manager endpoint they had
// flagged (Apply endpoint) that is still flagged; then it removes the
// files. A process that stopped cleanly removed its file and its flags.
// It returns what it cleared, one line each, for the log.
func ClearLeftFlags(dir string) (cleared []string, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, e := range ents {
		pid, perr := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json"))
		if !strings.HasSuffix(e.Name(), ".json") || perr != nil || pid <= 0 || !errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			continue // not a state file, or its process still runs
		}
		file := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var s State
		if err := json.Unmarshal(b, &s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		}
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
