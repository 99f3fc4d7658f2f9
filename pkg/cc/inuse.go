// SPDX-License-Identifier: Apache-2.0

package cc

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
)

// Users is what still uses a loaded congestion control: the network
// namespaces whose default it is (every new TCP socket there that asks for
// none gets it, plain TCP included) and the live subflows that run it.
type Users struct {
	DefaultIn []string
	Subflows  int
}

// None reports whether nothing uses it.
func (u Users) None() bool { return len(u.DefaultIn) == 0 && u.Subflows == 0 }

func (u Users) String() string {
	var parts []string
	if len(u.DefaultIn) > 0 {
		parts = append(parts, "it is the default congestion control (net.ipv4.tcp_congestion_control) of "+strings.Join(u.DefaultIn, ", "))
	}
	if u.Subflows > 0 {
		parts = append(parts, fmt.Sprintf("%d live subflows run it", u.Subflows))
	}
	return strings.Join(parts, "; ")
}

// UsersOf finds what uses the congestion control loaded as name under
// root. Nothing uses one that is not loaded there (Unload then says so).
func UsersOf(name, root string) (Users, error) {
	var u Users
	if err := kernel.CheckPrivileges(); err != nil {
		return u, err
	}
	m, err := OpenSubflows(root, name)
	if errors.Is(err, os.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return u, err
	}
	if u.DefaultIn, err = kernel.DefaultIn(name); err != nil {
		m.Close()
		return u, fmt.Errorf("reading the namespaces' default congestion controls: %w", err)
	}
	defer m.Close()
	var key uint64
	for it := m.Iterate(); it.Next(&key, new([]byte)); {
		u.Subflows++
	}
	return u, nil
}
