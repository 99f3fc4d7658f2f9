// SPDX-License-Identifier: Apache-2.0

package linkem

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"golang.org/x/sys/unix"
)

// openTUN creates a layer-3 TUN device named dev inside namespace ns and
// returns its file. The device is not persistent: closing the file removes
// it, together with its addresses and routes, so cleanup cannot forget it.
func openTUN(ns, dev string) (*os.File, error) {
	var f *os.File
	err := netns.Do(ns, func() error {
		// /dev/net/tun binds the device to the namespace of the opener.
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(dev)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("device name %q: %w", dev, err)
		}
		// IFF_NO_PI: bare IP packets. IFF_TUN_EXCL: fail instead of
		// attaching to an existing persistent device of someone else.
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_TUN_EXCL)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("create tun %s in %s: %w", dev, ns, err)
		}
		// Non-blocking so that os.File uses the runtime poller: Close then
		// wakes a goroutine blocked in Read, which a blocking fd would not.
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return err
		}
		f = os.NewFile(uintptr(fd), "tun:"+ns+"/"+dev)
		return nil
	})
	return f, err
}

// configureTUN sets the MTU and queue length, assigns local (with the peer
// as the other end of the point-to-point link) and brings the device up.
func configureTUN(ns, dev string, mtu int, local, peer netip.Prefix) error {
	if local.Addr().Is4() {
		// IPv6 on an IPv4 link would only add router solicitations and MLD
		// reports to the counters. Done before "up" so none are sent.
		p := "/proc/sys/net/ipv6/conf/" + dev + "/disable_ipv6"
		err := netns.Do(ns, func() error { return os.WriteFile(p, []byte("1"), 0) })
		if err != nil && !errors.Is(err, os.ErrNotExist) { // no IPv6 in the kernel is fine
			return fmt.Errorf("disable ipv6 on %s: %w", dev, err)
		}
	}
	// The TUN queue holds what the kernel routed to the device until the
	// forwarder reads it: normally next to nothing. It only fills while the
	// forwarder is not scheduled, and then every packet it cannot hold is a
	// loss nobody configured. 4096 packets ride out a 200 ms stall at 20,000
	// packets/s (1000, the default, overflowed in a CI run on a busy host).
	if err := netns.Exec(ns, "ip", "link", "set", "dev", dev,
		"mtu", strconv.Itoa(mtu), "txqueuelen", "4096"); err != nil {
		return err
	}
	// "peer" gives a route to the peer's prefix through this device; TUN is
	// point-to-point, so no neighbour resolution is needed.
	args := []string{"ip", "addr", "add", local.String(), "peer", peer.String(), "dev", dev}
	if local.Addr().Is6() {
		args = append(args, "nodad") // the link is usable at once
	}
	if err := netns.Exec(ns, args...); err != nil {
		return err
	}
	return netns.Exec(ns, "ip", "link", "set", "dev", dev, "up")
}
