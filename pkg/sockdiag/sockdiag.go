// SPDX-License-Identifier: Apache-2.0

// Package sockdiag lists TCP sockets (plain TCP connections and MPTCP
// subflows) the way `ss -ti` sees them: NETLINK_SOCK_DIAG, inet_diag with
// tcp_info, the congestion control, and for a subflow the token of its
// MPTCP connection. It is the kernel's own view, beside pkg/stats (mptcp-cc's
// BPF maps); tests and the lab read it instead of parsing `ss`.
package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"
	"unsafe"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// Socket is one TCP socket.
type Socket struct {
	Local, Remote netip.AddrPort
	State         uint8  // TCP state, the kernel's numbering (1 established ... 10 listen)
	CC            string // congestion control (INET_DIAG_CONG)
	MPTCP         bool   // a subflow of an MPTCP connection (its ULP is "mptcp")
	Token         uint32 // local token of that MPTCP connection (0 for plain TCP)
	// BackupLocal: this side flagged the subflow backup (MP_PRIO sent or
	// the endpoint's flag); BackupRemote: the peer did.
	BackupLocal, BackupRemote bool
	LocalID, RemoteID         uint8 // the path manager's address IDs
	Info                      unix.TCPInfo
}

// TCP states (include/net/tcp_states.h).
const (
	Established = 1
	SynSent     = 2
	FinWait1    = 4
	FinWait2    = 5
	CloseWait   = 8
	LastAck     = 9
	Listen      = 10
	Closing     = 11
)

// States is a set of TCP states, one bit per state.
type States uint32

// StateSet returns the set of the given states.
func StateSet(states ...uint8) States {
	var s States
	for _, st := range states {
		s |= 1 << st
	}
	return s
}

var (
	// Connected are the states of sockets that carry (or just carried)
	// data. Not SYN_SENT: a joining subflow counts once it is established
	// (before, its cwnd is only the initial window it has not used).
	Connected = StateSet(Established, FinWait1, FinWait2, CloseWait, LastAck, Closing)
	// Listening is the listening state alone.
	Listening = StateSet(Listen)
)

// Conn is a NETLINK_SOCK_DIAG socket. It lists the sockets of the network
// namespace it was opened in, whichever goroutine uses it later. It is safe
// for concurrent use.
type Conn struct {
	c *netlink.Conn
	// Timeout bounds each dump (2 s if zero).
	Timeout time.Duration
}

// Dial opens a Conn in the network namespace of the calling thread: the
// process's, unless called from inside netns.Do.
func Dial() (*Conn, error) { return dial(nil) }

// DialNS opens a Conn in the named network namespace (see package netns);
// "" is the process's namespace. The socket stays in that namespace.
func DialNS(name string) (*Conn, error) {
	if name == "" {
		return Dial()
	}
	f, err := os.Open(netns.Path(name))
	if err != nil {
		return nil, fmt.Errorf("sock_diag: network namespace %s: %w", name, err)
	}
	defer f.Close()
	c, err := dial(&netlink.Config{NetNS: int(f.Fd())})
	if err != nil {
		return nil, fmt.Errorf("in netns %s: %w", name, err)
	}
	return c, nil
}

func dial(cfg *netlink.Config) (*Conn, error) {
	c, err := netlink.Dial(unix.NETLINK_SOCK_DIAG, cfg)
	if err != nil {
		return nil, fmt.Errorf("sock_diag socket: %w", err)
	}
	return &Conn{c: c}, nil
}

// Close closes the socket.
func (c *Conn) Close() error { return c.c.Close() }

// Dump is DialNS, TCP and Close in one, for callers that look once.
func Dump(ns string, family uint8, states States) ([]Socket, error) {
	c, err := DialNS(ns)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.TCP(family, states)
}

// inet_diag constants (include/uapi/linux/inet_diag.h, sock_diag.h,
// mptcp.h).
const (
	sockDiagByFamily = 20

	inetDiagInfo    = 2
	inetDiagCong    = 4
	inetDiagULPInfo = 19

	ulpInfoName  = 1
	ulpInfoMPTCP = 3

	mptcpSubflowAttrTokenLoc = 2
	mptcpSubflowAttrFlags    = 8
	mptcpSubflowAttrIDRem    = 9
	mptcpSubflowAttrIDLoc    = 10

	mptcpSubflowFlagBkupRem = 1 << 4
	mptcpSubflowFlagBkupLoc = 1 << 5

	reqLen = 56 // struct inet_diag_req_v2
	msgLen = 72 // struct inet_diag_msg
)

// TCP lists the TCP sockets of family (unix.AF_INET or unix.AF_INET6; 0
// for both) whose state is in states, with their tcp_info, congestion
// control and MPTCP token.
func (c *Conn) TCP(family uint8, states States) ([]Socket, error) {
	if family == 0 {
		v4, err := c.TCP(unix.AF_INET, states)
		if err != nil {
			return v4, err
		}
		v6, err := c.TCP(unix.AF_INET6, states)
		return append(v4, v6...), err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	if err := c.c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	msgs, err := c.c.Execute(netlink.Message{
		Header: netlink.Header{Type: sockDiagByFamily, Flags: netlink.Request | netlink.Dump},
		Data:   request(family, unix.IPPROTO_TCP, states),
	})
	if err != nil {
		return nil, fmt.Errorf("sock_diag dump: %w", err)
	}
	out := make([]Socket, 0, len(msgs))
	var errs []error
	for _, m := range msgs {
		if m.Header.Type != sockDiagByFamily {
			continue
		}
		s, err := decode(m.Data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// request encodes struct inet_diag_req_v2 asking for tcp_info and the
// congestion control (the ULP info comes with INET_DIAG_INFO).
func request(family, protocol uint8, states States) []byte {
	b := make([]byte, reqLen)
	b[0] = family
	b[1] = protocol
	b[2] = 1<<(inetDiagInfo-1) | 1<<(inetDiagCong-1) // idiag_ext
	binary.NativeEndian.PutUint32(b[4:], uint32(states))
	return b
}

// decode parses one inet_diag_msg and its attributes.
func decode(b []byte) (Socket, error) {
	if len(b) < msgLen {
		return Socket{}, fmt.Errorf("sock_diag: short inet_diag_msg (%d bytes)", len(b))
	}
	family := b[0]
	s := Socket{State: b[1]}
	sport, dport := binary.BigEndian.Uint16(b[4:]), binary.BigEndian.Uint16(b[6:])
	switch family {
	case unix.AF_INET:
		s.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[8:12])), sport)
		s.Remote = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[24:28])), dport)
	case unix.AF_INET6:
		s.Local = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), sport)
		s.Remote = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[24:40])).Unmap(), dport)
	default:
		return Socket{}, fmt.Errorf("sock_diag: address family %d", family)
	}
	if len(b) == msgLen {
		return s, nil
	}
	ad, err := netlink.NewAttributeDecoder(b[msgLen:])
	if err != nil {
		return s, fmt.Errorf("sock_diag: attributes of %s: %w", s.Local, err)
	}
	for ad.Next() {
		switch ad.Type() {
		case inetDiagInfo:
			ad.Do(func(v []byte) error {
				// A shorter tcp_info (older kernel) leaves the rest zero.
				copy(unsafe.Slice((*byte)(unsafe.Pointer(&s.Info)), unsafe.Sizeof(s.Info)), v)
				return nil
			})
		case inetDiagCong:
			s.CC = ad.String()
		case inetDiagULPInfo:
			ad.Nested(func(ulp *netlink.AttributeDecoder) error {
				for ulp.Next() {
					switch ulp.Type() {
					case ulpInfoName:
						s.MPTCP = ulp.String() == "mptcp"
					case ulpInfoMPTCP:
						ulp.Nested(func(mp *netlink.AttributeDecoder) error {
							for mp.Next() {
								switch mp.Type() {
								case mptcpSubflowAttrTokenLoc:
									s.Token = mp.Uint32()
								case mptcpSubflowAttrFlags:
									f := mp.Uint32()
									s.BackupLocal = f&mptcpSubflowFlagBkupLoc != 0
									s.BackupRemote = f&mptcpSubflowFlagBkupRem != 0
								case mptcpSubflowAttrIDLoc:
									s.LocalID = mp.Uint8()
								case mptcpSubflowAttrIDRem:
									s.RemoteID = mp.Uint8()
								}
							}
							return nil
						})
					}
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return s, fmt.Errorf("sock_diag: attributes of %s: %w", s.Local, err)
	}
	return s, nil
}
