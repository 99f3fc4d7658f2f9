package mptcpnl

import (
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// FuzzDecodeEvent feeds arbitrary event messages to DecodeEvent: it must
// never panic, and whatever it accepts must keep the command as the type.
// testdata/fuzz/FuzzDecodeEvent holds real messages captured from Linux 6.18.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(uint8(EventSubEstablished), attrs(f, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(evAttrToken, 1)
		ae.Uint16(evAttrFamily, unix.AF_INET6)
		ae.Bytes(evAttrSaddr6, ip("2001:db8::1"))
		ae.Bytes(evAttrDaddr6, ip("2001:db8::2"))
		ae.Bytes(evAttrSport, port(1))
		ae.Bytes(evAttrDport, port(2))
		ae.Uint8(evAttrLocID, 1)
		ae.Uint8(evAttrRemID, 2)
		ae.Int32(evAttrIfIdx, 3)
		ae.Uint16(evAttrFlags, 3)
	}))
	f.Add(uint8(99), attrs(f, func(ae *netlink.AttributeEncoder) {
		ae.Nested(300, func(nae *netlink.AttributeEncoder) error {
			nae.Uint8(1, 1)
			return nil
		})
	}))
	f.Add(uint8(EventClosed), []byte{})
	f.Fuzz(func(t *testing.T, cmd uint8, data []byte) {
		e, err := DecodeEvent(cmd, data)
		if err != nil {
			return
		}
		if e.Type != EventType(cmd) {
			t.Errorf("type %v, want %d", e.Type, cmd)
		}
		_ = e.String()
	})
}
