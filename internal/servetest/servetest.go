// SPDX-License-Identifier: Apache-2.0

// Package servetest runs `mptcp-cc serve` as a child process for tests, as
// an operator's init system would: its log kept, the metrics address it
// announces, signals, and its exit. The process is killed at cleanup if the
// test did not stop it.
package servetest

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is a running `mptcp-cc serve`.
type Proc struct {
	Cmd  *exec.Cmd
	t    testing.TB
	mu   sync.Mutex
	log  strings.Builder
	addr chan string
	done chan struct{}
}

// addrRe finds the address in the line serve logs once it listens.
var addrRe = regexp.MustCompile(`address=http://(\S+)/metrics`)

// Start runs `bin serve --config config args...`.
func Start(t testing.TB, bin, config string, args ...string) *Proc {
	t.Helper()
	p := &Proc{t: t, addr: make(chan string, 1), done: make(chan struct{})}
	p.Cmd = exec.Command(bin, append([]string{"serve", "--config", config}, args...)...)
	stderr, err := p.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.Cmd.Stdout = p.Cmd.Stderr
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if m := addrRe.FindStringSubmatch(line); m != nil {
				select {
				case p.addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		if p.Cmd.ProcessState == nil {
			_ = p.Cmd.Process.Kill()
			_ = p.Cmd.Wait()
		}
	})
	return p
}

// Logs is what the daemon logged so far.
func (p *Proc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// Ready waits for the metrics address the daemon logs once it is up and
// returns its /metrics URL.
func (p *Proc) Ready() string {
	p.t.Helper()
	select {
	case a := <-p.addr:
		return "http://" + a + "/metrics"
	case <-p.done:
		_ = p.Cmd.Wait()
		p.t.Fatalf("the daemon exited before serving (%v):\n%s", p.Cmd.ProcessState, p.Logs())
	case <-time.After(60 * time.Second):
		p.t.Fatalf("the daemon did not serve within 60 s:\n%s", p.Logs())
	}
	return ""
}

// WaitLog waits until the log holds s at least n times.
func (p *Proc) WaitLog(s string, n int) {
	p.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); strings.Count(p.Logs(), s) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			p.t.Fatalf("the daemon did not log %q %d time(s) within 30 s:\n%s", s, n, p.Logs())
		}
	}
}

// Stop signals the daemon and returns its exit code.
func (p *Proc) Stop(sig syscall.Signal) int {
	p.t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
	code, _ := p.Wait()
	return code
}

// Wait returns the exit code and log of a daemon expected to exit.
func (p *Proc) Wait() (int, string) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.Cmd.Process.Kill()
		p.t.Fatalf("the daemon did not exit within 60 s:\n%s", p.Logs())
	}
	_ = p.Cmd.Wait()
	return p.Cmd.ProcessState.ExitCode(), p.Logs()
}

// Get fetches url and fails t unless it answers 200.
func Get(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

// Lines are the lines of s that contain sub, for a failure message.
func Lines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
