// SPDX-License-Identifier: Apache-2.0

package cc_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// ParseParams is the one set of rules load's flags, the daemon's
// configuration and the scenario language apply.
func TestParseParams(t *testing.T) {
	ok := []struct {
		name string
		in   cc.ParamInput
		want cc.Params
	}{
		{"defaults", cc.ParamInput{Algo: "olia"}, cc.Params{RSFTarget: cc.DefaultRSFTarget}},
		{"flags kept", cc.ParamInput{Algo: "lia", LISA: true, Trace: true, Pacing: true}, cc.Params{LISA: true, Trace: true, Pacing: true, RSFTarget: cc.DefaultRSFTarget}},
		{"target given", cc.ParamInput{Algo: "rsf", RSFTarget: 5 * time.Millisecond, RSFTargetSet: true}, cc.Params{RSFTarget: 5 * time.Millisecond}},
		{"target bounds", cc.ParamInput{Algo: "rsf", RSFTarget: time.Hour, RSFTargetSet: true}, cc.Params{RSFTarget: time.Hour}},
		{"unread allowed", cc.ParamInput{Algo: "olia", RSFTarget: 20 * time.Millisecond, RSFTargetSet: true, AllowUnread: true}, cc.Params{RSFTarget: 20 * time.Millisecond}},
	}
	for _, c := range ok {
		got, err := cc.ParseParams(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s: ParseParams(%+v) = %+v, %v; want %+v", c.name, c.in, got, err, c.want)
		}
	}
	bad := []struct {
		name   string
		in     cc.ParamInput
		unread bool
		want   string
	}{
		{"unread", cc.ParamInput{Algo: "olia", RSFTarget: 20 * time.Millisecond, RSFTargetSet: true}, true, "rsf_target: a parameter of rsf only; olia does not read it: drop it"},
		{"negative", cc.ParamInput{Algo: "rsf", RSFTarget: -time.Second, RSFTargetSet: true}, false, "rsf_target: -1s is out of range (1µs to 1h)"},
		{"zero given", cc.ParamInput{Algo: "rsf", RSFTargetSet: true}, false, "rsf_target: 0s is out of range"},
		{"too long", cc.ParamInput{Algo: "rsf", RSFTarget: 2 * time.Hour, RSFTargetSet: true}, false, "2h0m0s is out of range"},
		{"below resolution", cc.ParamInput{Algo: "rsf", RSFTarget: 500 * time.Nanosecond, RSFTargetSet: true}, false, "500ns is below the microsecond resolution"},
		{"range checked when unread is allowed", cc.ParamInput{Algo: "lia", RSFTarget: -time.Second, RSFTargetSet: true, AllowUnread: true}, false, "-1s is out of range"},
	}
	for _, c := range bad {
		_, err := cc.ParseParams(c.in)
		var pe *cc.ParamError
		if !errors.As(err, &pe) {
			t.Errorf("%s: ParseParams(%+v) = %v, want a *cc.ParamError", c.name, c.in, err)
			continue
		}
		if pe.Param != cc.ParamRSFTarget || pe.Unread != c.unread || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q (param %s, unread %v), want %q (unread %v)", c.name, err, pe.Param, pe.Unread, c.want, c.unread)
		}
	}
	if _, err := cc.ParseParams(cc.ParamInput{Algo: "olai"}); err == nil || !strings.Contains(err.Error(), `unknown algorithm "olai"`) {
		t.Errorf("unknown algorithm: %v", err)
	}
}
