// SPDX-License-Identifier: Apache-2.0

package mptcpnl

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ErrNotUserspacePM is returned by SetSubflowBackup when the kernel refuses
// a per-connection change because the namespace runs the in-kernel path
// manager: only the userspace one (net.mptcp.pm_type=1) takes it.
var ErrNotUserspacePM = errors.New("per-connection backup flags need the userspace path manager (net.mptcp.pm_type=1, as mptcpd runs); with the in-kernel one, flag the endpoint instead (SetEndpointFlags)")

// SetSubflowBackup flags (or clears) one connection's subflows from local
// to remote as backup and sends MP_PRIO to the peer (SET_FLAGS with a
// token). A zero port in remote matches any port. The kernel takes this
// only under the userspace path manager.
func (c *Conn) SetSubflowBackup(token uint32, local, remote netip.AddrPort, backup bool) error {
	attrs, err := encodeSubflowFlags(token, local, remote, backup)
	if err != nil {
		return err
	}
	if _, err := c.execute(cmdSetFlags, attrs, netlink.Acknowledge); err != nil {
		// The kernel answers EINVAL ("userspace PM not selected") under
		// the in-kernel path manager; the connection's namespace is the
		// Conn's, which this process may not be in, so say both causes.
		if errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("mptcpnl: backup=%v on %v->%v of connection %08x: %v (if the namespace runs the in-kernel path manager: %w)", backup, local, remote, token, err, ErrNotUserspacePM)
		}
		return fmt.Errorf("mptcpnl: backup=%v on %v->%v of connection %08x: %w", backup, local, remote, token, err)
	}
	return nil
}

func encodeSubflowFlags(token uint32, local, remote netip.AddrPort, backup bool) ([]byte, error) {
	if !local.Addr().IsValid() || !remote.Addr().IsValid() {
		return nil, errors.New("mptcpnl: a subflow's flags need its local and remote addresses")
	}
	var flags EndpointFlags
	if backup {
		flags = FlagBackup
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrToken, token)
	ae.Nested(attrAddr, encodeAddr(local, &flags))
	ae.Nested(attrAddrRemote, encodeAddr(remote, nil))
	return ae.Encode()
}

// CreateSubflow asks the userspace path manager to open a subflow of the
// connection from local (its address; ID 0 lets the kernel pick one) to
// remote (address and port) (SUBFLOW_CREATE). Under the in-kernel path
// manager the kernel refuses it.
func (c *Conn) CreateSubflow(token uint32, local netip.Addr, remote netip.AddrPort) error {
	if !local.IsValid() || !remote.Addr().IsValid() || remote.Port() == 0 {
		return errors.New("mptcpnl: a new subflow needs a local address and a remote address and port")
	}
	if err := c.subflowCmd(cmdSubflowCreate, token, netip.AddrPortFrom(local, 0), remote); err != nil {
		return fmt.Errorf("mptcpnl: subflow %v->%v of connection %08x: %w", local, remote, token, err)
	}
	return nil
}

// DestroySubflow asks the userspace path manager to close the connection's
// subflow from local to remote (addresses and ports; SUBFLOW_DESTROY). The
// connection then sends again, on its other subflows, the data it had
// given that subflow and the peer has not acknowledged. Under the
// in-kernel path manager the kernel refuses it.
func (c *Conn) DestroySubflow(token uint32, local, remote netip.AddrPort) error {
	if !local.Addr().IsValid() || local.Port() == 0 || !remote.Addr().IsValid() || remote.Port() == 0 {
		return errors.New("mptcpnl: closing a subflow needs its local and remote addresses and ports")
	}
	if err := c.subflowCmd(cmdSubflowDestroy, token, local, remote); err != nil {
		return fmt.Errorf("mptcpnl: closing subflow %v->%v of connection %08x: %w", local, remote, token, err)
	}
	return nil
}

// subflowCmd sends a subflow command (create, destroy) for the
// connection's subflow from local to remote (a zero port: not sent).
func (c *Conn) subflowCmd(cmd uint8, token uint32, local, remote netip.AddrPort) error {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(attrToken, token)
	ae.Nested(attrAddr, encodeAddr(local, nil))
	ae.Nested(attrAddrRemote, encodeAddr(remote, nil))
	attrs, err := ae.Encode()
	if err != nil {
		return err
	}
	_, err = c.execute(cmd, attrs, netlink.Acknowledge)
	return err
}

// encodeAddr encodes an address (and its port, unless 0) nested in a
// request, with flags when given.
func encodeAddr(a netip.AddrPort, flags *EndpointFlags) func(*netlink.AttributeEncoder) error {
	return func(nae *netlink.AttributeEncoder) error {
		ip := a.Addr().Unmap()
		if ip.Is4() {
			nae.Uint16(addrAttrFamily, unix.AF_INET)
			b := ip.As4()
			nae.Bytes(addrAttrAddr4, b[:])
		} else {
			nae.Uint16(addrAttrFamily, unix.AF_INET6)
			b := ip.As16()
			nae.Bytes(addrAttrAddr6, b[:])
		}
		if a.Port() != 0 {
			nae.Uint16(addrAttrPort, a.Port())
		}
		if flags != nil {
			nae.Uint32(addrAttrFlags, uint32(*flags))
		}
		return nil
	}
}
