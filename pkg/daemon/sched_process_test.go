// SPDX-License-Identifier: Apache-2.0

package daemon_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/servetest"
	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/internal/testkernel"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
)

// serve with namespace schedulers on this machine (the kernel's "default"
// is the only registered one): the namespaces are set (here: adopted), the
// metrics say which scheduler each uses; a namespace deleted while the
// daemon runs sets mptcp_cc_scrape_error and leaves the others exported;
// on_exit remove leaves a namespace with the default alone.
func TestServeNetnsScheduler(t *testing.T) {
	root := testkernel.PinRoot(t)
	own, err := sched.Current("")
	if err != nil || own != "default" {
		// on_exit remove gives a namespace that has the configured
		// scheduler the default back: only then is this one left as it is.
		t.Skipf("this namespace's scheduler is %q (%v); the test needs the kernel's default", own, err)
	}
	ns := testenv.Unique("mptcp-cc-srv-")
	if err := netns.Create(ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if netns.Exists(ns) {
			_ = netns.Delete(ns)
		}
	})
	config := fmt.Sprintf("bpffs: %s\non_exit: remove\nnetns_schedulers:\n  - {netns: %s, scheduler: default}\n  - {scheduler: %s}\nmetrics: {listen_address: \"127.0.0.1:0\"}\nevents: {enabled: false}\n", root, ns, own)
	d := startDaemon(t, config)
	url := d.Ready()
	body := servetest.Get(t, url)
	for _, want := range []string{
		fmt.Sprintf(`mptcp_cc_netns_scheduler_info{netns="%s",scheduler="default"} 1`, ns),
		fmt.Sprintf(`mptcp_cc_netns_scheduler_info{netns="host",scheduler="%s"} 1`, own),
		"mptcp_cc_schedulers_loaded 0",
		"mptcp_cc_scrape_error 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	if err := netns.Delete(ns); err != nil {
		t.Fatal(err)
	}
	body = servetest.Get(t, url)
	if !strings.Contains(body, "mptcp_cc_scrape_error 1") || strings.Contains(body, `netns="`+ns+`"`) || !strings.Contains(body, `netns="host"`) {
		t.Errorf("after deleting %s:\n%s", ns, servetest.Lines(body, "netns_scheduler_info")+"\n"+servetest.Lines(body, "scrape_error"))
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(d.Logs(), ns); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the warning does not name %s:\n%s", ns, d.Logs())
			break
		}
	}
	if code := d.Stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d:\n%s", code, d.Logs())
	}
	if cur, _ := sched.Current(""); cur != own {
		t.Errorf("on_exit remove changed this namespace's scheduler from %s to %s", own, cur)
	}
}
