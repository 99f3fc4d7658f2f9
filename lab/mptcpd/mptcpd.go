// SPDX-License-Identifier: Apache-2.0

// Package mptcpd runs mptcpd, the Multipath TCP daemon (Debian package
// mptcpd 0.12), as the path manager of one network namespace.
//
// The division of work (docs/mptcpd.md): mptcpd decides which subflows a
// connection has; mptcp-cc decides how each of them sends. Nothing in
// mptcp-cc depends on mptcpd: its congestion controls, policies and views
// work on whatever subflows exist, whoever opened them.
//
// mptcpd 0.12 has no option naming its configuration file (it always reads
// /etc/mptcpd/mptcpd.conf) and keeps no state on disk. So Start passes
// every setting that file may hold on the command line, where it wins: what
// runs does not depend on what the machine's file says.
package mptcpd

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/mptcpnl"
	"github.com/mptcp-cc/mptcp-cc/pkg/netns"
)

// Debian installs the daemon outside PATH, since systemd starts it.
const debianBinary = "/usr/libexec/mptcpd"

// The plugins mptcpd 0.12 ships (package mptcpd-plugins).
const (
	// AddrAdv adds an in-kernel path manager endpoint, with the
	// configured flags, for every local address: the kernel then opens
	// the subflows. It does nothing for the userspace path manager.
	AddrAdv = "addr_adv"
	// SSPI, "single subflow per interface", is meant for the userspace
	// path manager; on this kernel it opens no subflow (docs/mptcpd.md).
	SSPI = "sspi"
)

// Options of one mptcpd process.
type Options struct {
	NS string // network namespace; only it is entered, not the mount namespace
	// Plugins to load (--load-plugins); default addr_adv.
	Plugins []string
	// PathManager is the plugin that gets the connection events
	// (--path-manager); default the first of Plugins.
	PathManager string
	// AddrFlags for the endpoints addr_adv adds: subflow, signal, backup,
	// fullmesh. Default subflow.
	AddrFlags []string
	// NotifyFlags: which addresses plugins hear of. Default existing (the
	// addresses present at start), skip_link_local, skip_loopback: an
	// endpoint on 127.0.0.1 or fe80:: would only waste subflow slots.
	NotifyFlags []string
	LogPath     string // mptcpd's log (stderr and stdout); required
	Debug       bool   // -d
}

var (
	addrFlags   = []string{"subflow", "signal", "backup", "fullmesh"}
	notifyFlags = []string{"existing", "skip_link_local", "skip_loopback"}
)

func (o Options) withDefaults() Options {
	if len(o.Plugins) == 0 {
		o.Plugins = []string{AddrAdv}
	}
	if o.PathManager == "" {
		o.PathManager = o.Plugins[0]
	}
	if len(o.AddrFlags) == 0 {
		o.AddrFlags = []string{"subflow"}
	}
	if len(o.NotifyFlags) == 0 {
		o.NotifyFlags = notifyFlags
	}
	return o
}

func checkFlags(what string, got, valid []string) error {
	for _, f := range got {
		if !slices.Contains(valid, f) {
			return fmt.Errorf("mptcpd: %s flag %q: choose from %s", what, f, strings.Join(valid, ", "))
		}
	}
	return nil
}

// Binary returns the path of the mptcpd executable: Debian's, else the
// one on PATH.
func Binary() (string, error) {
	if _, err := os.Stat(debianBinary); err == nil {
		return debianBinary, nil
	}
	if p, err := exec.LookPath("mptcpd"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("mptcpd: not installed (no %s, none on PATH): install the Debian packages mptcpd and mptcpd-plugins (make deps)", debianBinary)
}

// PluginDir returns the directory of mptcpd's plugins, which Debian puts
// under the multiarch library directory.
func PluginDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/*/mptcpd")
	dirs = append(dirs, "/usr/lib/mptcpd", "/usr/local/lib/mptcpd")
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, AddrAdv+".so")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("mptcpd: no plugin directory with addr_adv.so (looked in /usr/lib/*/mptcpd): install the Debian package mptcpd-plugins (make deps)")
}

// Argv returns the command line that runs mptcpd with o (in the caller's
// namespace: Start enters o.NS).
func Argv(o Options) ([]string, error) {
	o = o.withDefaults()
	if err := checkFlags("address", o.AddrFlags, addrFlags); err != nil {
		return nil, err
	}
	if slices.Contains(o.AddrFlags, "signal") && slices.Contains(o.AddrFlags, "fullmesh") {
		return nil, errors.New("mptcpd: address flags signal and fullmesh exclude each other (the kernel refuses the endpoint): drop one")
	}
	if err := checkFlags("notify", o.NotifyFlags, notifyFlags); err != nil {
		return nil, err
	}
	if !slices.Contains(o.Plugins, o.PathManager) {
		return nil, fmt.Errorf("mptcpd: path manager %q is not among the plugins loaded (%s): add it to the plugins", o.PathManager, strings.Join(o.Plugins, ","))
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := PluginDir()
	if err != nil {
		return nil, err
	}
	for _, p := range o.Plugins {
		if _, err := os.Stat(filepath.Join(dir, p+".so")); err != nil {
			return nil, fmt.Errorf("mptcpd: no plugin %q in %s: choose from %s, %s (mptcpd-plugins 0.12)", p, dir, AddrAdv, SSPI)
		}
	}
	argv := []string{bin, "--log=stderr", "--plugin-dir=" + dir,
		"--load-plugins=" + strings.Join(o.Plugins, ","), "--path-manager=" + o.PathManager,
		"--addr-flags=" + strings.Join(o.AddrFlags, ","), "--notify-flags=" + strings.Join(o.NotifyFlags, ",")}
	if o.Debug {
		argv = append(argv, "-d")
	}
	return argv, nil
}

// Daemon is a running mptcpd.
type Daemon struct {
	NS      string
	Argv    []string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error // how it exited, once done is closed
}

// Every shipped plugin logs this line when it is ready; before it, the
// daemon may not have subscribed to the kernel's events yet.
const readyLine = "path manager initialized"

// Start runs mptcpd in o.NS and returns once its plugins are initialised.
func Start(o Options) (*Daemon, error) {
	if o.NS == "" {
		return nil, errors.New("mptcpd: no network namespace given: mptcp-cc runs mptcpd only inside a namespace it built")
	}
	if o.LogPath == "" {
		return nil, errors.New("mptcpd: no log path given: its log is the only record of what the daemon decided")
	}
	argv, err := Argv(o)
	if err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mptcpd: log file: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C meant for us reaches it only through
	// Stop, after we have recorded what it did.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The child is forked from the thread that joined the namespace, so it
	// starts inside it, with our mounts (ip netns exec would remount /sys).
	if err := netns.Do(o.NS, cmd.Start); err != nil {
		return nil, fmt.Errorf("mptcpd: starting in %s: %w", o.NS, err)
	}
	d := &Daemon{NS: o.NS, Argv: argv, LogPath: o.LogPath, cmd: cmd, done: make(chan struct{})}
	go func() { d.err = cmd.Wait(); close(d.done) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(d.Log(), readyLine) {
			return d, nil
		}
		select {
		case <-d.done:
			return nil, fmt.Errorf("mptcpd exited at start (%v); its log:\n%s", d.err, d.Log())
		default:
		}
		if time.Now().After(deadline) {
			_ = d.Stop()
			return nil, fmt.Errorf("mptcpd: no plugin initialised within 10s; its log:\n%s", d.Log())
		}
	}
}

// Command is the shell command equivalent to the daemon, for records.
func (d *Daemon) Command() string { return shellCommand(d.NS, d.Argv) }

// Command is the shell command that runs mptcpd with o, for a person to
// run (ip netns exec is fine there: mptcpd reads no BPF pins).
func Command(o Options) (string, error) {
	argv, err := Argv(o)
	if err != nil {
		return "", err
	}
	return shellCommand(o.NS, argv), nil
}

func shellCommand(ns string, argv []string) string {
	return "ip netns exec " + ns + " " + strings.Join(argv, " ")
}

// Pid is the daemon's process id.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// Log returns what the daemon has logged so far.
func (d *Daemon) Log() string {
	b, _ := os.ReadFile(d.LogPath)
	return string(b)
}

// Stop ends the daemon (SIGTERM, then SIGKILL after 5 s) and waits for it.
// Endpoints it added stay: they belong to the namespace. Stopping a
// stopped daemon is a no-op.
func (d *Daemon) Stop() error {
	select {
	case <-d.done:
		return nil
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(5 * time.Second):
	}
	_ = d.cmd.Process.Kill()
	<-d.done
	return fmt.Errorf("mptcpd (pid %d) ignored SIGTERM for 5s and was killed", d.Pid())
}

// WaitEndpoints waits until the in-kernel path manager of ns has an
// endpoint for each of addrs (what addr_adv adds) and returns them all.
func WaitEndpoints(ns string, addrs []netip.Addr, timeout time.Duration) ([]mptcpnl.Endpoint, error) {
	c, err := mptcpnl.DialNS(ns)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var eps []mptcpnl.Endpoint
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		eps, err = c.Endpoints()
		if err != nil {
			return nil, err
		}
		missing := slices.DeleteFunc(slices.Clone(addrs), func(a netip.Addr) bool {
			return slices.ContainsFunc(eps, func(e mptcpnl.Endpoint) bool { return e.Addr == a })
		})
		if len(missing) == 0 {
			return eps, nil
		}
		if time.Now().After(deadline) {
			return eps, fmt.Errorf("mptcpd: no endpoint for %v in %s after %v (endpoints: %v)", missing, ns, timeout, eps)
		}
	}
}

// UserspacePM switches ns to the userspace path manager
// (net.mptcp.pm_type=1, Linux 5.19+): the kernel then opens no subflow by
// itself, and only a daemon's netlink commands do.
func UserspacePM(ns string) error {
	if err := netns.Exec(ns, "sysctl", "-qw", "net.mptcp.pm_type=1"); err != nil {
		return fmt.Errorf("mptcpd: the userspace path manager needs net.mptcp.pm_type (Linux 5.19+): %w", err)
	}
	return nil
}
