// SPDX-License-Identifier: Apache-2.0

package pathctl

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A publisher's file holds its connections as they are now, and is gone
// once it closes; a file whose process is gone is not read.
func TestPublisherState(t *testing.T) {
	dir := t.TempDir()
	p := NewPublisher(dir, "test", func(err error) { t.Error(err) })
	c := NewConnState("lab", 0xab, time.Unix(100, 0))
	p.Set(c)
	a := SubflowID{netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.1.0.1:80")}
	b := SubflowID{netip.MustParseAddrPort("10.0.1.1:2"), netip.MustParseAddrPort("10.1.0.1:80")}
	c.Update(Event{At: time.Unix(101, 0), Apply: PerConnection, Decision: Decision{Mode: BestPath, Best: a, Backup: []SubflowID{b}, Switched: true, Trial: true, Reason: "trial of best-path"}})
	p.Set(c)
	p.Set(NewConnState("", 0xcd, time.Unix(100, 0)))
	p.Remove("", 0xcd)

	var got []State
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if got, err = ReadStates(dir); err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 && len(got[0].Connections) == 1 && got[0].Connections[0].Trial {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state never showed the trial alone: %+v", got)
		}
	}
	s := got[0]
	cs := s.Connections[0]
	if s.PID != os.Getpid() || s.Program != "test" || cs.Token != "000000ab" || cs.Netns != "lab" || cs.Label() != "trial" ||
		cs.Best != a.String() || len(cs.Backup) != 1 || cs.Backup[0] != b.String() || cs.Switches != 1 || cs.Apply != PerConnection {
		t.Fatalf("state %+v", s)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	p.Set(c) // after Close: ignored, no panic
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file is left after Close: %v", err)
	}

	// A dead process's file (pid 2^22+1 is above pid_max's ceiling).
	if err := os.WriteFile(filepath.Join(dir, "4194305.json"), []byte(`{"pid":4194305,"connections":[{"token":"00000001"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadStates(dir); err != nil || len(got) != 0 {
		t.Fatalf("read a dead process's state: %+v %v", got, err)
	}
	if got, err := ReadStates(filepath.Join(dir, "missing")); err != nil || got != nil {
		t.Fatalf("missing dir: %+v %v", got, err)
	}
}
