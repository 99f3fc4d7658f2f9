// SPDX-License-Identifier: Apache-2.0

package ssthresh_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/lab/ssthresh"
)

func TestParseArm(t *testing.T) {
	for in, want := range map[string]ssthresh.Arm{
		"cubic":     {Name: "cubic", CC: "cubic"},
		"cubic+tcp": {Name: "cubic+tcp", CC: "cubic", TCP: true},
	} {
		if got, err := ssthresh.ParseArm(in); err != nil || got != want {
			t.Errorf("ParseArm(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "+tcp", "cubic+udp", "cubic+tcp+tcp"} {
		if _, err := ssthresh.ParseArm(in); err == nil {
			t.Errorf("ParseArm(%q) accepted it", in)
		}
	}
}

// TestRunCountsEveryArm runs two arms for a few seconds, MPTCP and plain
// TCP, with a limit of 2 packets so that every ssthresh counts: each arm
// must have sent, reduced its windows and reported sightings, and the
// report must name both.
func TestRunCountsEveryArm(t *testing.T) {
	testenv.RequireRoot(t)
	var arms []ssthresh.Arm
	for _, s := range []string{"reno", "cubic+tcp"} {
		a, _ := ssthresh.ParseArm(s)
		arms = append(arms, a)
	}
	rep, err := ssthresh.Run(context.Background(), ssthresh.Options{Prefix: "sst" + testenv.Suffix(), Arms: arms, For: 4 * time.Second, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	t.Log(b.String()[:min(b.Len(), 1500)])
	for _, a := range rep.Arms {
		if a.Sent == 0 || a.Counts.Reductions() == 0 || len(a.Sightings) == 0 || len(a.Errors) > 0 {
			t.Errorf("%s: sent %d, %d reductions, %d sightings, errors %v", a.Name, a.Sent, a.Counts.Reductions(), len(a.Sightings), a.Errors)
		}
		if !strings.Contains(b.String(), "\n"+a.Name+" ") {
			t.Errorf("the report has no row for %s", a.Name)
		}
		mptcp := false
		for _, s := range a.Sightings {
			mptcp = mptcp || s.MPTCP
		}
		if mptcp == a.TCP {
			t.Errorf("%s: sightings from MPTCP subflows: %v, want %v", a.Name, mptcp, !a.TCP)
		}
	}
}

// An interrupted run (Ctrl-C in mptcp-lab) ends within seconds, not at
// the end of its duration, and says it was interrupted.
func TestRunStopsWhenCancelled(t *testing.T) {
	testenv.RequireRoot(t)
	a, _ := ssthresh.ParseArm("reno+tcp")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Second, cancel)
	start := time.Now()
	_, err := ssthresh.Run(ctx, ssthresh.Options{Prefix: "ssc" + testenv.Suffix(), Arms: []ssthresh.Arm{a}, For: 5 * time.Minute})
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a run cancelled after 1 s took %v to return", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled run returned %v, want context.Canceled", err)
	}
}
