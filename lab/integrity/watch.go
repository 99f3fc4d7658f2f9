// SPDX-License-Identifier: Apache-2.0

package integrity

// The MIB watch: which counters of something amiss moved during each
// connection, at both ends (connections one at a time only).

import (
	"github.com/mptcp-cc/mptcp-cc/lab/topo"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// watch reads the anomaly counters of both ends after every connection:
// connections run one at a time, so what moved belongs to the last one.
type watch struct {
	ns   [2]string
	last [2]map[string]uint64
}

func newWatch(n *topo.Net) (*watch, error) {
	w := &watch{ns: [2]string{n.Client, n.Server}}
	_, err := w.next()
	return w, err
}

// next is what moved since the last call, as "client X" or "server X".
func (w *watch) next() (map[string]uint64, error) {
	var out map[string]uint64
	for i, ns := range w.ns {
		m, err := kernel.MPTCPMIB(ns)
		if err != nil {
			return nil, err
		}
		if w.last[i] != nil {
			for _, k := range kernel.MPTCPAnomalies {
				if d := m[k] - w.last[i][k]; d != 0 {
					if out == nil {
						out = map[string]uint64{}
					}
					out[[2]string{"client ", "server "}[i]+k] = d
				}
			}
		}
		w.last[i] = m
	}
	return out, nil
}
