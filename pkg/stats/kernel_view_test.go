// SPDX-License-Identifier: Apache-2.0

package stats

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/sockdiag"
)

// A view answers at once: nothing before its first dump has finished,
// then that dump's list until the period is over, and a dump that is slow
// stretches the period to 20 times its duration.
func TestKernelViewAnswersAtOnce(t *testing.T) {
	var dumps atomic.Int32
	release := make(chan struct{})
	v := &KernelView{every: time.Hour, period: time.Hour, dump: func() []sockdiag.Socket {
		dumps.Add(1)
		<-release
		return []sockdiag.Socket{{Token: 7}}
	}}
	if socks, at := v.Sockets(); socks != nil || !at.IsZero() {
		t.Fatalf("before any dump: %v at %v, want nothing", socks, at)
	}
	for deadline := time.Now().Add(5 * time.Second); dumps.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no dump started")
		}
	}
	if socks, _ := v.Sockets(); socks != nil || dumps.Load() != 1 {
		t.Fatalf("while the first dump runs: %v and %d dumps, want nothing and one dump", socks, dumps.Load())
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		socks, at := v.Sockets()
		if len(socks) == 1 && socks[0].Token == 7 && !at.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dump's list never showed")
		}
		time.Sleep(time.Millisecond)
	}
	if n := dumps.Load(); n != 1 {
		t.Fatalf("%d dumps within the period, want 1", n)
	}

	// A dump of 10 ms with a period of 1 ms: the next waits 200 ms.
	slow := &KernelView{every: time.Millisecond, period: time.Millisecond, dump: func() []sockdiag.Socket {
		time.Sleep(10 * time.Millisecond)
		return nil
	}}
	slow.Sockets()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		slow.mu.Lock()
		p, done := slow.period, !slow.at.IsZero()
		slow.mu.Unlock()
		if done {
			if p < 200*time.Millisecond {
				t.Fatalf("period %v after a 10 ms dump, want at least 200 ms", p)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow dump never finished")
		}
	}
}
