// SPDX-License-Identifier: Apache-2.0

package sockdiag

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"unsafe"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// diagMsg builds an inet_diag_msg as the kernel sends it, then attrs.
func diagMsg(t *testing.T, family, state uint8, local, remote netip.AddrPort, attrs func(ae *netlink.AttributeEncoder)) []byte {
	t.Helper()
	b := make([]byte, msgLen)
	b[0], b[1] = family, state
	binary.BigEndian.PutUint16(b[4:], local.Port())
	binary.BigEndian.PutUint16(b[6:], remote.Port())
	if family == unix.AF_INET {
		a, r := local.Addr().As4(), remote.Addr().As4()
		copy(b[8:], a[:])
		copy(b[24:], r[:])
	} else {
		a, r := local.Addr().As16(), remote.Addr().As16()
		copy(b[8:], a[:])
		copy(b[24:], r[:])
	}
	binary.NativeEndian.PutUint32(b[40:], 0xdeadbeef) // idiag_expires etc.: ignored
	if attrs == nil {
		return b
	}
	ae := netlink.NewAttributeEncoder()
	attrs(ae)
	ab, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return append(b, ab...)
}

func tcpInfoBytes(in unix.TCPInfo) []byte {
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&in)), unsafe.Sizeof(in))...)
}

func TestDecodeMPTCPSubflow(t *testing.T) {
	local := netip.MustParseAddrPort("10.0.1.1:40000")
	remote := netip.MustParseAddrPort("10.0.2.1:5201")
	info := unix.TCPInfo{State: Established, Ca_state: 3, Snd_cwnd: 42, Snd_ssthresh: 0x7fffffff, Rtt: 12500, Min_rtt: 10000, Bytes_acked: 1 << 40}
	b := diagMsg(t, unix.AF_INET, Established, local, remote, func(ae *netlink.AttributeEncoder) {
		ae.Bytes(inetDiagInfo, tcpInfoBytes(info))
		ae.String(inetDiagCong, "mptcp_olia")
		ae.Nested(inetDiagULPInfo, func(ulp *netlink.AttributeEncoder) error {
			ulp.String(ulpInfoName, "mptcp")
			ulp.Nested(ulpInfoMPTCP, func(mp *netlink.AttributeEncoder) error {
				mp.Uint32(1, 0x11111111) // token_rem: not ours
				mp.Uint32(mptcpSubflowAttrTokenLoc, 0xcafe0001)
				mp.Uint32(3, 7) // relwrite_seq
				return nil
			})
			return nil
		})
	})
	s, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Local != local || s.Remote != remote || s.State != Established || s.CC != "mptcp_olia" || !s.MPTCP || s.Token != 0xcafe0001 {
		t.Fatalf("decoded %+v", s)
	}
	if s.Info.Snd_cwnd != 42 || s.Info.Snd_ssthresh != 0x7fffffff || s.Info.Rtt != 12500 || s.Info.Bytes_acked != 1<<40 || s.Info.Ca_state != 3 {
		t.Fatalf("tcp_info %+v", s.Info)
	}
}

// A plain TCP socket over IPv6 (v4-mapped addresses are unmapped), with a
// tcp_info shorter than ours (an older kernel) and another ULP.
func TestDecodeTCPv6ShortInfo(t *testing.T) {
	local := netip.MustParseAddrPort("[2001:db8::1]:443")
	remote := netip.MustParseAddrPort("[::ffff:192.0.2.7]:50000")
	full := tcpInfoBytes(unix.TCPInfo{Snd_cwnd: 10, Rtt: 300, Bytes_acked: 9})
	cut := unsafe.Offsetof(unix.TCPInfo{}.Pacing_rate) // the first tcp_info (Linux 2.6)
	b := diagMsg(t, unix.AF_INET6, FinWait1, local, remote, func(ae *netlink.AttributeEncoder) {
		ae.Bytes(inetDiagInfo, full[:cut])
		ae.Bytes(inetDiagCong, []byte("cubic\x00"))
		ae.Nested(inetDiagULPInfo, func(ulp *netlink.AttributeEncoder) error {
			ulp.String(ulpInfoName, "tls")
			return nil
		})
	})
	s, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Local != local || s.Remote.Addr() != netip.MustParseAddr("192.0.2.7") || s.Remote.Port() != 50000 {
		t.Fatalf("addresses %s %s", s.Local, s.Remote)
	}
	if s.State != FinWait1 || s.CC != "cubic" || s.MPTCP || s.Token != 0 || s.Info.Snd_cwnd != 10 || s.Info.Rtt != 300 || s.Info.Bytes_acked != 0 {
		t.Fatalf("decoded %+v", s)
	}
}

func TestDecodeNoAttributes(t *testing.T) {
	s, err := decode(diagMsg(t, unix.AF_INET, Listen, netip.MustParseAddrPort("0.0.0.0:5201"), netip.MustParseAddrPort("0.0.0.0:0"), nil))
	if err != nil || s.State != Listen || s.Local.Port() != 5201 || s.CC != "" {
		t.Fatalf("decoded %+v, %v", s, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	lp := netip.MustParseAddrPort("10.0.0.1:1")
	ok := diagMsg(t, unix.AF_INET, Established, lp, lp, nil)
	badFamily := append([]byte(nil), ok...)
	badFamily[0] = unix.AF_UNIX
	// An attribute whose length runs past the end of the message.
	badAttr := append(append([]byte(nil), ok...), 0xff, 0x00, inetDiagCong, 0x00, 'x')
	// A token that is not 4 bytes.
	badToken := diagMsg(t, unix.AF_INET, Established, lp, lp, func(ae *netlink.AttributeEncoder) {
		ae.Nested(inetDiagULPInfo, func(ulp *netlink.AttributeEncoder) error {
			ulp.Nested(ulpInfoMPTCP, func(mp *netlink.AttributeEncoder) error {
				mp.Uint16(mptcpSubflowAttrTokenLoc, 1)
				return nil
			})
			return nil
		})
	})
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"short":      {ok[:msgLen-1], "short"},
		"family":     {badFamily, "family"},
		"attribute":  {badAttr, "attributes of 10.0.0.1:1"},
		"token size": {badToken, "attributes of 10.0.0.1:1"},
	} {
		if _, err := decode(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one about %q", name, err, c.want)
		}
	}
}

func TestRequest(t *testing.T) {
	b := request(unix.AF_INET6, unix.IPPROTO_TCP, Connected)
	if len(b) != reqLen || b[0] != unix.AF_INET6 || b[1] != unix.IPPROTO_TCP || b[2] != 1<<1|1<<3 {
		t.Fatalf("request % x", b)
	}
	if got := States(binary.NativeEndian.Uint32(b[4:])); got != Connected {
		t.Fatalf("states %#x, want %#x", got, Connected)
	}
	if Connected != 1<<1|1<<4|1<<5|1<<8|1<<9|1<<11 || Listening != 1<<10 {
		t.Fatalf("Connected %#x Listening %#x", Connected, Listening)
	}
}
