// SPDX-License-Identifier: Apache-2.0

package ccparams_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/ccparams"
)

// Parse is the one set of rules load's flags, the daemon's
// configuration and the scenario language apply.
func TestParse(t *testing.T) {
	ok := []struct {
		name string
		in   ccparams.Input
		want ccparams.Params
	}{
		{"defaults", ccparams.Input{Algo: "olia"}, ccparams.Params{RSFTarget: ccparams.DefaultRSFTarget}},
		{"flags kept", ccparams.Input{Algo: "lia", LISA: true, Trace: true, Pacing: true}, ccparams.Params{LISA: true, Trace: true, Pacing: true, RSFTarget: ccparams.DefaultRSFTarget}},
		{"target given", ccparams.Input{Algo: "rsf", RSFTarget: 5 * time.Millisecond, RSFTargetSet: true}, ccparams.Params{RSFTarget: 5 * time.Millisecond}},
		{"target bounds", ccparams.Input{Algo: "rsf", RSFTarget: time.Hour, RSFTargetSet: true}, ccparams.Params{RSFTarget: time.Hour}},
		{"unread allowed", ccparams.Input{Algo: "olia", RSFTarget: 20 * time.Millisecond, RSFTargetSet: true, AllowUnread: true}, ccparams.Params{RSFTarget: 20 * time.Millisecond}},
	}
	for _, c := range ok {
		got, err := ccparams.Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s: ParseParams(%+v) = %+v, %v; want %+v", c.name, c.in, got, err, c.want)
		}
	}
	bad := []struct {
		name   string
		in     ccparams.Input
		unread bool
		want   string
	}{
		{"unread", ccparams.Input{Algo: "olia", RSFTarget: 20 * time.Millisecond, RSFTargetSet: true}, true, "rsf_target: a parameter of rsf only; olia does not read it: drop it"},
		{"negative", ccparams.Input{Algo: "rsf", RSFTarget: -time.Second, RSFTargetSet: true}, false, "rsf_target: -1s is out of range (1µs to 1h)"},
		{"zero given", ccparams.Input{Algo: "rsf", RSFTargetSet: true}, false, "rsf_target: 0s is out of range"},
		{"too long", ccparams.Input{Algo: "rsf", RSFTarget: 2 * time.Hour, RSFTargetSet: true}, false, "2h0m0s is out of range"},
		{"below resolution", ccparams.Input{Algo: "rsf", RSFTarget: 500 * time.Nanosecond, RSFTargetSet: true}, false, "500ns is below the microsecond resolution"},
		{"range checked when unread is allowed", ccparams.Input{Algo: "lia", RSFTarget: -time.Second, RSFTargetSet: true, AllowUnread: true}, false, "-1s is out of range"},
	}
	for _, c := range bad {
		_, err := ccparams.Parse(c.in)
		var pe *ccparams.Error
		if !errors.As(err, &pe) {
			t.Errorf("%s: ParseParams(%+v) = %v, want a *ccparams.Error", c.name, c.in, err)
			continue
		}
		if pe.Param != ccparams.RSFTarget || pe.Unread != c.unread || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q (param %s, unread %v), want %q (unread %v)", c.name, err, pe.Param, pe.Unread, c.want, c.unread)
		}
	}
	if _, err := ccparams.Parse(ccparams.Input{Algo: "olai"}); err == nil || !strings.Contains(err.Error(), `unknown algorithm "olai"`) {
		t.Errorf("unknown algorithm: %v", err)
	}
}
