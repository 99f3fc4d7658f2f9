// SPDX-License-Identifier: Apache-2.0

package sched_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/pkg/kernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/kernel/kerneltest"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// A fixture host: the caller's namespace and "lab" have MPTCP and two
// schedulers, "plain" has no MPTCP.
func fixture(t *testing.T) string {
	return kerneltest.Root(t, kerneltest.MPTCP(""), kerneltest.MPTCP("netns/lab/"), map[string]string{
		"netns/lab/proc/sys/net/mptcp/available_schedulers":    "default mptcp_t_rr\n",
		"netns/plain/proc/sys/net/ipv4/tcp_congestion_control": "cubic\n",
	})
}

func TestUseAndCurrentPerNamespace(t *testing.T) {
	fixture(t)
	if got, err := sched.Available(); err != nil || strings.Join(got, " ") != "default" {
		t.Errorf("Available: %v, %v", got, err)
	}
	if err := sched.Use("mptcp_t_rr", "lab"); err != nil {
		t.Fatal(err)
	}
	if cur, err := sched.Current("lab"); err != nil || cur != "mptcp_t_rr" {
		t.Errorf("lab after Use: %q, %v", cur, err)
	}
	if cur, err := sched.Current(""); err != nil || cur != "default" {
		t.Errorf("Use in lab changed the caller's namespace: %q, %v", cur, err)
	}
	// The caller's namespace has not got it: the error lists what it has.
	err := sched.Use("mptcp_t_rr", "")
	if err == nil || !strings.Contains(err.Error(), `scheduler "mptcp_t_rr" is not registered (this namespace has: default)`) {
		t.Errorf("Use of a scheduler the namespace lacks: %v", err)
	}
	// A namespace without MPTCP, and one that does not exist.
	if _, err := sched.Current("plain"); !errors.Is(err, sched.ErrNoMPTCP) {
		t.Errorf("Current without MPTCP: %v, want ErrNoMPTCP", err)
	}
	if err := sched.Use("default", "plain"); !errors.Is(err, sched.ErrNoMPTCP) {
		t.Errorf("Use without MPTCP: %v, want ErrNoMPTCP", err)
	}
	for _, ns := range []string{"nosuch", "../lab"} {
		if _, err := sched.Current(ns); err == nil {
			t.Errorf("Current(%q) had no error", ns)
		}
	}
	if _, err := sched.Current("nosuch"); err == nil || !strings.Contains(err.Error(), "`ip netns list` shows those that do") {
		t.Errorf("Current of a missing namespace: %v", err)
	}
}

// One error for the missing hook: what the preflight's feature reports
// and what CheckHook returns are the same errors.Is target, and its text
// names the kernel that brings the hook.
func TestCheckHookFromFixture(t *testing.T) {
	root := fixture(t)
	if sched.ErrNoHook != kernel.ErrNoSchedHook {
		t.Fatal("sched.ErrNoHook is not kernel.ErrNoSchedHook")
	}
	for _, want := range []string{"bpf_struct_ops_mptcp_sched_ops", "mptcp_net-next", "export branch", "checked through 7.3"} {
		if !strings.Contains(sched.ErrNoHook.Error(), want) {
			t.Errorf("the hook error does not say %q: %v", want, sched.ErrNoHook)
		}
	}
	kerneltest.BTF(t, root, "bpf_struct_ops_tcp_congestion_ops")
	if err := sched.CheckHook(); !errors.Is(err, sched.ErrNoHook) || !errors.Is(err, kernel.ErrNoSchedHook) {
		t.Errorf("without the hook: %v", err)
	}
	kerneltest.BTF(t, root, "bpf_struct_ops_tcp_congestion_ops", "bpf_struct_ops_mptcp_sched_ops")
	if err := sched.CheckHook(); err != nil {
		t.Errorf("with the hook: %v", err)
	}
	kerneltest.Remove(t, root, "sys/kernel/btf/vmlinux")
	if err := sched.CheckHook(); !errors.Is(err, sched.ErrNoHook) || !strings.Contains(err.Error(), "no readable BTF") {
		t.Errorf("without BTF: %v", err)
	}
}
