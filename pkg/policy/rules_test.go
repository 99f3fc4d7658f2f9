// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The delayed-ACK cap's bounds follow the kernel's tick rate, and say so.
func TestValidDelack(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		hz   int
		ok   bool
		want string
	}{
		{8 * time.Millisecond, 250, true, ""},
		{7 * time.Millisecond, 250, false, "8ms (two of its ticks at HZ=250)"},
		{2 * time.Millisecond, 1000, true, ""},
		{time.Millisecond, 0, true, ""},
		{500 * time.Microsecond, 0, false, "not known here"},
		{200 * time.Millisecond, 250, true, ""},
		{201 * time.Millisecond, 250, false, "200ms (TCP_DELACK_MAX)"},
	} {
		err := validDelack(c.d, c.hz)
		if c.ok != (err == nil) || err != nil && (!errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v at HZ=%d: %v, want ok=%v (%q)", c.d, c.hz, err, c.ok, c.want)
		}
	}
}
