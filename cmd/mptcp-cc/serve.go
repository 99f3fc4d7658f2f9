// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/daemon"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

const serveHelp = `With --config FILE, the daemon does what the file says (docs/daemon.md);
a flag given on the command line overrides the file's setting. SIGHUP
reloads the file; SIGTERM stops the daemon, which keeps or removes what it
set up as on_exit (--on-exit) says.`

func cmdServe(fs *flag.FlagSet) cli.Action {
	configFile := fs.String("config", "", "YAML configuration `FILE` (docs/daemon.md)")
	check := fs.Bool("config.check", false, "validate the configuration file and exit, touching nothing (exit 0: valid, 1: not)")
	root := pinRootFlag(fs)
	policyRoot := fs.String("policy-bpffs", "", "bpffs `DIR` for policy pins (default: <bpffs>-policy)")
	schedRoot := fs.String("sched-bpffs", "", "bpffs `DIR` for packet scheduler pins (default: <bpffs>-sched)")
	listen := fs.String("web.listen-address", metrics.DefaultListenAddress, "`HOST:PORT` to serve /metrics on")
	allowRemote := fs.Bool("web.allow-remote", false, "allow a listen address that is not loopback")
	maxSubflows := fs.Int("metrics.max-subflows", metrics.DefaultMaxSubflows, "bound on subflows exported with per-subflow series (0: aggregates only)")
	onExit := fs.String("on-exit", string(daemon.OnExitKeep), "what to do on SIGTERM, `ACTION`: keep (leave algorithms loaded, policies attached) or remove (unload/detach what the configuration names)")
	var netns stringList
	fs.Var(&netns, "events.netns", "also follow the mptcp_pm events of this named network namespace `NAME` (repeatable)")
	noEvents := fs.Bool("events.disable", false, "do not subscribe to mptcp_pm events")
	logLevel := fs.String("log.level", "info", "`LEVEL` of the messages logged: debug, info, warn or error")
	logFormat := fs.String("log.format", "text", "`FORMAT` of the log: text or json")
	return func(_ []string, out io.Writer) error {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if o := daemon.OnExit(*onExit); o != daemon.OnExitKeep && o != daemon.OnExitRemove {
			return cli.Usagef("--on-exit %q: want keep or remove", *onExit)
		}

		// Flags given on the command line override the file.
		override := func(cfg *daemon.Config) {
			if set["bpffs"] || cfg.BPFFS == "" {
				cfg.BPFFS = *root
			}
			if set["policy-bpffs"] {
				cfg.PolicyBPFFS = *policyRoot
			}
			if set["sched-bpffs"] {
				cfg.SchedBPFFS = *schedRoot
			}
			if set["web.listen-address"] {
				cfg.Metrics.ListenAddress = *listen
			}
			if set["web.allow-remote"] {
				cfg.Metrics.AllowRemote = *allowRemote
			}
			if set["metrics.max-subflows"] {
				cfg.Metrics.MaxSubflows = maxSubflows
			}
			if set["on-exit"] {
				cfg.OnExit = daemon.OnExit(*onExit)
			}
			if set["events.netns"] {
				cfg.Events.Namespaces = append(cfg.Events.Namespaces, netns...)
			}
			if *noEvents {
				f := false
				cfg.Events.Enabled = &f
			}
		}
		// A reload (SIGHUP) reads the file again, with the same overrides.
		readConfig := func() (daemon.Config, error) {
			if *configFile != "" {
				return daemon.ReadConfigFile(*configFile, override)
			}
			var cfg daemon.Config
			override(&cfg)
			return cfg, cfg.Validate()
		}
		if *check && *configFile == "" {
			return cli.Usagef("--config.check needs --config FILE")
		}
		cfg, err := readConfig()
		if err != nil {
			return err
		}
		if *check {
			r := cfg.Resolve()
			paths := "off"
			if r.Pathctl.Enabled {
				n := len(r.Pathctl.Namespaces)
				if *r.Pathctl.OwnNetns {
					n++
				}
				paths = fmt.Sprintf("on in %d namespace(s)", n)
			}
			fmt.Fprintf(out, "%s: valid: %d algorithm(s), %d policy rule(s), %d scheduler(s), %d namespace scheduler(s), path controller %s, metrics on %s (max %d subflows), on_exit %s, pins under %s\n",
				*configFile, len(r.Algorithms), len(r.Policies), len(r.Schedulers), len(r.NetnsSchedulers), paths, r.Metrics.ListenAddress, *r.Metrics.MaxSubflows, r.OnExit, r.BPFFS)
			return nil
		}

		log, err := serveLogger(*logLevel, *logFormat)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		// A second SIGTERM/SIGINT while on_exit runs ends the process at once
		// (the pins stay, as after SIGKILL).
		go func() {
			<-ctx.Done()
			stop()
		}()
		// SIGHUP reloads the configuration (systemctl reload). Signals that
		// arrive during a reload fold into one more.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		reload := make(chan struct{}, 1)
		go func() {
			for range hup {
				select {
				case reload <- struct{}{}:
				default:
				}
			}
		}()
		return daemon.Run(ctx, cfg, daemon.Options{Logger: log, Reload: reload, ReadConfig: readConfig})
	}
}

func serveLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, cli.Usagef("--log.level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, cli.Usagef("--log.format %q: want text or json", format)
}
