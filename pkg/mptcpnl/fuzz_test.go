// SPDX-License-Identifier: Apache-2.0

package mptcpnl

import "testing"

// FuzzDecodeEvent feeds arbitrary event messages to DecodeEvent: it must
// never panic, and whatever it accepts must keep the command as the type.
// Seeds: the decoder's test cases (codec_test.go), and in
// testdata/fuzz/FuzzDecodeEvent real messages captured from Linux 6.18.
func FuzzDecodeEvent(f *testing.F) {
	for _, c := range decodeEventCases {
		f.Add(c.cmd, attrs(f, c.data))
	}
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
