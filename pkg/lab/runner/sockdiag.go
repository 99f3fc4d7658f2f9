package runner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// TCPSock is one TCP socket (an MPTCP subflow or a plain TCP connection) as
// the kernel reports it through sock_diag (what `ss -ti` shows), with the
// MPTCP connection token when the socket is a subflow.
type TCPSock struct {
	Local, Remote netip.AddrPort
	State         uint8
	CC            string
	MPTCP         bool
	Token         uint32 // local token of the MPTCP connection (0 for TCP)
	Info          unix.TCPInfo
}

// diagConn is a NETLINK_SOCK_DIAG socket that lives in one network
// namespace (it is created there and stays bound to it).
type diagConn struct {
	mu  sync.Mutex
	fd  int
	seq uint32
	buf []byte
}

func openDiag(ns string) (*diagConn, error) {
	d := &diagConn{fd: -1, buf: make([]byte, 1<<16)}
	open := func() error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			unix.Close(fd)
			return err
		}
		tv := unix.NsecToTimeval(int64(2 * time.Second))
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		d.fd = fd
		return nil
	}
	var err error
	if ns == "" {
		err = open()
	} else {
		err = netns.Do(ns, open)
	}
	if err != nil {
		return nil, fmt.Errorf("sock_diag socket in %s: %w", ns, err)
	}
	return d, nil
}

func (d *diagConn) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

const (
	inetDiagInfo    = 2
	inetDiagCong    = 4
	inetDiagULPInfo = 19
	ulpInfoName     = 1
	ulpInfoMPTCP    = 3
	mptcpAttrTokLoc = 2

	sockDiagByFamily = 20
	diagReqLen       = 56
	diagMsgLen       = 72
)

// tcpStates are the states of sockets that carry (or just carried) data:
// ESTABLISHED, FIN_WAIT1/2, CLOSE_WAIT, LAST_ACK, CLOSING. Not SYN_SENT: a
// joining subflow counts once it is established (before, its cwnd is only
// the initial window it has not used).
const tcpStates = 1<<1 | 1<<4 | 1<<5 | 1<<8 | 1<<9 | 1<<11

// Dump lists the IPv4 TCP sockets of the namespace that carry data.
func (d *diagConn) Dump() ([]TCPSock, error) { return d.dump(tcpStates) }

// Listening lists the listening IPv4 TCP sockets.
func (d *diagConn) Listening() ([]TCPSock, error) { return d.dump(1 << 10) }

func (d *diagConn) dump(states uint32) ([]TCPSock, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return nil, errors.New("sock_diag socket closed")
	}
	d.seq++
	req := make([]byte, unix.NLMSG_HDRLEN+diagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], d.seq)
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = unix.AF_INET
	r[1] = unix.IPPROTO_TCP
	r[2] = 1<<(inetDiagInfo-1) | 1<<(inetDiagCong-1)
	ne.PutUint32(r[4:], states)
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag request: %w", err)
	}
	var out []TCPSock
	for {
		n, _, err := unix.Recvfrom(d.fd, d.buf, 0)
		if err != nil {
			return out, fmt.Errorf("sock_diag reply: %w", err)
		}
		msgs, err := syscallParseNetlink(d.buf[:n])
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			if m.seq != d.seq {
				continue
			}
			switch m.typ {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.data) >= 4 {
					if e := int32(ne.Uint32(m.data)); e != 0 {
						return out, fmt.Errorf("sock_diag: %w", unix.Errno(-e))
					}
				}
				return out, nil
			case sockDiagByFamily:
				if s, ok := parseDiagMsg(m.data); ok {
					out = append(out, s)
				}
			}
		}
	}
}

type nlMsg struct {
	typ  uint16
	seq  uint32
	data []byte
}

func syscallParseNetlink(b []byte) ([]nlMsg, error) {
	var out []nlMsg
	ne := binary.NativeEndian
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(ne.Uint32(b[0:]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return out, fmt.Errorf("malformed netlink message (length %d of %d)", l, len(b))
		}
		out = append(out, nlMsg{typ: ne.Uint16(b[4:]), seq: ne.Uint32(b[8:]), data: b[unix.NLMSG_HDRLEN:l]})
		b = b[min(nlAlign(l), len(b)):]
	}
	return out, nil
}

func nlAlign(n int) int { return (n + 3) &^ 3 }

func parseDiagMsg(b []byte) (TCPSock, bool) {
	if len(b) < diagMsgLen || b[0] != unix.AF_INET {
		return TCPSock{}, false
	}
	s := TCPSock{State: b[1]}
	be := binary.BigEndian
	sport, dport := be.Uint16(b[4:]), be.Uint16(b[6:])
	s.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[8:12])), sport)
	s.Remote = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[24:28])), dport)
	forAttrs(b[diagMsgLen:], func(typ uint16, v []byte) {
		switch typ {
		case inetDiagInfo:
			n := min(len(v), int(unsafe.Sizeof(s.Info)))
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&s.Info)), unsafe.Sizeof(s.Info))[:n], v[:n])
		case inetDiagCong:
			s.CC = cString(v)
		case inetDiagULPInfo:
			forAttrs(v, func(t uint16, v []byte) {
				switch t {
				case ulpInfoName:
					s.MPTCP = cString(v) == "mptcp"
				case ulpInfoMPTCP:
					forAttrs(v, func(t uint16, v []byte) {
						if t == mptcpAttrTokLoc && len(v) >= 4 {
							s.Token = binary.NativeEndian.Uint32(v)
						}
					})
				}
			})
		}
	})
	return s, true
}

// forAttrs walks netlink attributes (struct rtattr / nlattr: u16 length,
// u16 type, payload, 4-byte aligned).
func forAttrs(b []byte, fn func(typ uint16, v []byte)) {
	ne := binary.NativeEndian
	for len(b) >= 4 {
		l := int(ne.Uint16(b[0:]))
		if l < 4 || l > len(b) {
			return
		}
		fn(ne.Uint16(b[2:])&0x3fff, b[4:l]) // strip NLA_F_NESTED / NET_BYTEORDER
		b = b[min(nlAlign(l), len(b)):]
	}
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
