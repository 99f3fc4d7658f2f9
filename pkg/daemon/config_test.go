// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
)

// Every example under testdata/config is valid.
func TestConfigExamples(t *testing.T) {
	files, err := filepath.Glob("../../testdata/config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseConfig(data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestConfigExampleResolved(t *testing.T) {
	data, err := os.ReadFile("../../testdata/config/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Resolve()
	if r.OnExit != OnExitKeep || r.BPFFS != "/sys/fs/bpf/mptcp-cc" || r.PolicyBPFFS != "/sys/fs/bpf/mptcp-cc-policy" {
		t.Errorf("resolved: %+v", r)
	}
	want := []Algorithm{
		{Name: "mptcp_olia", Algo: "olia", LISA: true, RSFTarget: cc.DefaultRSFTarget},
		{Name: "mptcp_rsf20", Algo: "rsf", RSFTarget: 20 * time.Millisecond},
		{Name: "mptcp_lia", Algo: "lia", RSFTarget: cc.DefaultRSFTarget},
	}
	if !reflect.DeepEqual(r.Algorithms, want) {
		t.Errorf("algorithms %+v, want %+v", r.Algorithms, want)
	}
	if r.Policies[0].CC != "mptcp_olia" || r.Policies[0].Algo != "" {
		t.Errorf("policy algo not resolved to its registered name: %+v", r.Policies[0])
	}
	if r.Policies[1].Dst != "198.51.100.0/24" || r.Policies[1].DstPort != 443 || !r.Policies[1].TCP {
		t.Errorf("policy 1: %+v", r.Policies[1])
	}
	if *r.Metrics.MaxSubflows != 4096 || r.Metrics.ListenAddress != "127.0.0.1:9464" || !*r.Events.Enabled {
		t.Errorf("metrics/events: %+v %+v", r.Metrics, r.Events)
	}
}

func TestConfigDefaults(t *testing.T) {
	for _, in := range []string{"", "# nothing\n", "~\n", "{}\n"} {
		c, err := ParseConfig([]byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		r := c.Resolve()
		if r.OnExit != OnExitKeep || *r.Metrics.MaxSubflows != 4096 || r.Metrics.ListenAddress != "127.0.0.1:9464" || len(r.Algorithms) != 0 {
			t.Errorf("%q: %+v", in, r)
		}
	}
	c, _ := ParseConfig([]byte("bpffs: /tmp/x/mptcp-cc\nmetrics: {max_subflows: 0}\n"))
	r := c.Resolve()
	if r.PolicyBPFFS != "/tmp/x/mptcp-cc-policy" || *r.Metrics.MaxSubflows != 0 {
		t.Errorf("%+v", r)
	}
}

// Bad input: a message naming the field, its line and the fix.
func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // substrings of the error, in order of the problems
	}{
		{"unknown algorithm", "algorithms:\n  - algo: cubic2\n", []string{"config:2: algorithms[0].algo: unknown algorithm \"cubic2\": choose one of balia, lia, olia, rsf"}},
		{"missing algo", "algorithms:\n  - name: foo\n", []string{"config:2: algorithms[0].algo: missing"}},
		{"bad name", "algorithms:\n  - algo: lia\n    name: Much_Too_Long_Name\n", []string{"config:3: algorithms[0].name:", "1 to 15 characters"}},
		{"duplicate name", "algorithms:\n  - algo: lia\n  - algo: lia\n", []string{"config:3: algorithms[1].name: \"mptcp_lia\" is also the name of algorithms[0]"}},
		{"unknown field", "algorithms:\n  - algo: lia\n    lisaa: true\n", []string{"config:3: algorithms[0].lisaa: unknown field \"lisaa\" in an algorithms entry (known fields: name, algo, lisa, rsf_target, trace, pacing)"}},
		{"top-level typo", "algorithm:\n  - algo: lia\n", []string{"config:1: algorithm: unknown field \"algorithm\" in the top level"}},
		{"duration without unit", "algorithms:\n  - algo: rsf\n    rsf_target: 10\n", []string{"config:3: algorithms[0].rsf_target: \"10\" is not a duration"}},
		{"negative duration", "algorithms:\n  - algo: rsf\n    rsf_target: -1s\n", []string{"config:3: algorithms[0].rsf_target: -1s is out of range"}},
		{"duration below the parameter's resolution", "algorithms:\n  - algo: rsf\n    rsf_target: 500ns\n", []string{"config:3: algorithms[0].rsf_target: 500ns is below the microsecond resolution"}},
		{"bool", "algorithms:\n  - algo: lia\n    lisa: maybe\n", []string{"config:3: algorithms[0].lisa: \"maybe\" is not a boolean"}},
		{"on_exit", "on_exit: later\n", []string{"config:1: on_exit: \"later\" is neither keep nor remove"}},
		{"malformed yaml", "algorithms: [\n  {algo: olia\n", []string{"config:", "did not find expected"}},
		{"tabs", "algorithms:\n\t- algo: olia\n", []string{"config:2", "tab"}},
		{"not a mapping", "- algo: olia\n", []string{"config:1: the configuration must be a mapping"}},
		{"two documents", "on_exit: keep\n---\non_exit: remove\n", []string{"more than one YAML document"}},
		{"missing cgroup", "algorithms: [{algo: olia}]\npolicies:\n  - algo: olia\n", []string{"config:3: policies[0].cgroup: missing"}},
		{"policy without cc", "policies:\n  - cgroup: a\n", []string{"config:2: policies[0].cc: missing"}},
		{"policy cc and algo", "algorithms: [{algo: olia}]\npolicies:\n  - {cgroup: a, cc: cubic, algo: olia}\n", []string{"config:3: policies[0]: give either cc"}},
		{"policy algo not loaded", "policies:\n  - {cgroup: a, algo: olia}\n", []string{"config:2: policies[0].algo: \"olia\" is not in this file's algorithms list"}},
		{"policy algo ambiguous", "algorithms: [{algo: olia}, {algo: olia, name: olia2}]\npolicies:\n  - {cgroup: a, algo: olia}\n", []string{"loaded under several names (mptcp_olia, olia2)"}},
		{"policy dst host bits", "policies:\n  - cgroup: a\n    cc: cubic\n    dst: 10.1.2.3/8\n", []string{"config:4: policies[0].dst: \"10.1.2.3/8\" has host bits set; did you mean 10.0.0.0/8?"}},
		{"policy dst garbage", "policies:\n  - {cgroup: a, cc: cubic, dst: example.com}\n", []string{"policies[0].dst: \"example.com\" is neither an address nor a prefix"}},
		{"policy port", "policies:\n  - {cgroup: a, cc: cubic, dst_port: 65536}\n", []string{"config:2: policies[0].dst_port: \"65536\" is not a port number"}},
		{"policy duplicate", "policies:\n  - {cgroup: a, cc: cubic}\n  - {cgroup: a/, cc: reno}\n", []string{"config:3: policies[1]: policies[0] already has a rule for cgroup"}},
		{"non-loopback", "metrics:\n  listen_address: 0.0.0.0:9464\n", []string{"config:2: metrics.listen_address:", "not a loopback address", "--web.allow-remote"}},
		{"listen without port", "metrics:\n  listen_address: 127.0.0.1\n", []string{"config:2: metrics.listen_address:", "missing port"}},
		{"max subflows", "metrics:\n  max_subflows: -1\n", []string{"config:2: metrics.max_subflows: -1 is out of range"}},
		{"relative bpffs", "bpffs: mptcp-cc\n", []string{"config:1: bpffs: \"mptcp-cc\" is not an absolute path"}},
		{"netns", "events:\n  namespaces: [\"a/b\"]\n", []string{"config:2: events.namespaces[0]:"}},
		{"huge", "# " + strings.Repeat("x", MaxConfigBytes) + "\n", []string{"at most"}},
		{"pathctl apply", "pathctl:\n  enabled: true\n  apply: both\n", []string{`config:3: pathctl.apply: unknown apply mode "both": use connection, endpoint or auto`}},
		{"pathctl on_stall", "pathctl:\n  on_stall: drop\n", []string{`config:2: pathctl.on_stall: on a stall: "drop" is not an answer`}},
		{"pathctl reset per endpoint", "pathctl:\n  apply: endpoint\n  on_stall: reset\n", []string{"pathctl.on_stall: reset closes one connection's subflow, which only the userspace path manager does"}},
		{"pathctl prefer", "pathctl:\n  prefer: speed\n", []string{`config:2: pathctl.prefer: prefer: "speed" is neither goodput`}},
		{"pathctl period", "pathctl:\n  period: 1ms\n", []string{"config:2: pathctl.period: 1ms is out of range (10ms to 1m0s)"}},
		{"pathctl period unit", "pathctl:\n  period: 500\n", []string{"config:2: pathctl.period: \"500\" is not a duration"}},
		{"pathctl max", "pathctl:\n  max_connections: -1\n", []string{"config:2: pathctl.max_connections: -1 is out of range (1 to 65536; leave it out for 64)"}},
		{"pathctl netns", "pathctl:\n  namespaces: [lab, \"../x\", lab]\n", []string{`config:2: pathctl.namespaces[1]: "../x" is not a network namespace name`, `pathctl.namespaces[2]: "lab" is also pathctl.namespaces[0]`}},
		{"pathctl nothing", "pathctl:\n  enabled: true\n  own_netns: false\n", []string{"config:1: pathctl: enabled, but controls no namespace: own_netns is false and namespaces is empty"}},
		{"pathctl peers", "pathctl:\n  peers: [10.0.0.1/8, example.com]\n", []string{`pathctl.peers[0]: "10.0.0.1/8" has host bits set; did you mean 10.0.0.0/8?`, `pathctl.peers[1]: "example.com" is neither an address nor a prefix`}},
		{"pathctl port 0", "pathctl:\n  ports: [443, 0]\n", []string{"config:2: pathctl.ports[1]: 0 is no port"}},
		{"pathctl port range", "pathctl:\n  ports: [70000]\n", []string{"pathctl.ports[0]: \"70000\" is not a port number"}},
		{"pathctl state_dir", "pathctl:\n  state_dir: run/x\n", []string{"config:2: pathctl.state_dir: \"run/x\" is not an absolute path"}},
		{"pathctl typo", "pathctl:\n  enable: true\n", []string{"config:2: pathctl.enable: unknown field \"enable\""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.in))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.in)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T, want *ConfigError: %v", err, err)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

// The pathctl section: off unless enabled, the daemon's own namespace
// unless own_netns is false, and the defaults filled in.
func TestConfigPathctl(t *testing.T) {
	c, err := ParseConfig([]byte("pathctl:\n  namespaces: [lab]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := c.Resolve().Pathctl
	if r.namespaces() != nil || r.Apply != "auto" || r.Period != 500*time.Millisecond || r.MaxConnections != 64 || r.StateDir != "/run/mptcp-cc/pathctl" || !*r.OwnNetns {
		t.Fatalf("defaults: %+v", r)
	}
	c, err = ParseConfig([]byte("pathctl:\n  enabled: true\n  own_netns: false\n  namespaces: [lab]\n  apply: connection\n  period: 250ms\n  max_connections: 2\n  peers: [10.1.0.0/16, 2001:db8::1]\n  ports: [5201]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r = c.Resolve().Pathctl
	if got := r.namespaces(); !reflect.DeepEqual(got, []string{"lab"}) {
		t.Fatalf("namespaces %v", got)
	}
	f := newPathFilter(r)
	for _, m := range []struct {
		local, remote string
		want          bool
	}{
		{"10.0.0.1:40000", "10.1.0.1:5201", true},
		{"10.1.0.1:5201", "10.1.0.9:40000", true}, // accepted here: the service port is local
		{"10.0.0.1:40000", "10.2.0.1:5201", false},
		{"10.0.0.1:40000", "10.1.0.1:80", false},
		{"[2001:db8::2]:40000", "[2001:db8::1]:5201", true},
		{"[2001:db8::2]:40000", "[::ffff:10.1.0.1]:5201", true},
	} {
		c := PathConn{Token: 1, Local: netip.MustParseAddrPort(m.local), Remote: netip.MustParseAddrPort(m.remote)}
		if f.match(c) != m.want {
			t.Errorf("%s -> %s: match %v", m.local, m.remote, !m.want)
		}
	}
}

func TestConfigErrorFile(t *testing.T) {
	_, err := ParseConfig([]byte("on_exit: x\nalgorithms: [{algo: nope}]\n"))
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatal(err)
	}
	ce.File = "/etc/mptcp-cc/config.yaml"
	want := "/etc/mptcp-cc/config.yaml:1: on_exit: \"x\" is neither keep nor remove\n/etc/mptcp-cc/config.yaml:2: algorithms[0].algo: unknown algorithm \"nope\""
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got\n%s\nwant prefix\n%s", err, want)
	}
}

// Flags override the file before validation: a non-loopback address in the
// file is fine with --web.allow-remote.
func TestParseConfigWithOverride(t *testing.T) {
	in := []byte("metrics:\n  listen_address: 0.0.0.0:9464\n")
	if _, err := ParseConfig(in); err == nil {
		t.Fatal("non-loopback accepted")
	}
	c, err := ParseConfigWith(in, func(c *Config) { c.Metrics.AllowRemote = true })
	if err != nil {
		t.Fatal(err)
	}
	if !c.Metrics.AllowRemote {
		t.Fatal("override lost")
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	data, _ := os.ReadFile("../../testdata/config/example.yaml")
	c, err := ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := ParseConfig(out)
	if err != nil {
		t.Fatalf("re-parsing:\n%s\n%v", out, err)
	}
	if !reflect.DeepEqual(c, c2) {
		t.Errorf("round trip changed the config:\n%+v\n%+v", c, c2)
	}
}

// Without the capabilities, the daemon refuses before touching anything,
// and says how to run it.
func TestNotPrivileged(t *testing.T) {
	saved := capEffective
	t.Cleanup(func() { capEffective = saved })
	capEffective = func() (uint64, error) { return 0, nil }
	err := checkPrivileges()
	if !errors.Is(err, ErrNotPrivileged) || !strings.Contains(err.Error(), "run it as root") {
		t.Fatalf("err = %v", err)
	}
	// With CAP_BPF+CAP_NET_ADMIN+CAP_PERFMON (no CAP_SYS_ADMIN) it is enough.
	capEffective = func() (uint64, error) { return 1<<39 | 1<<12 | 1<<38, nil }
	if err := checkPrivileges(); err != nil {
		t.Fatalf("capable non-root refused: %v", err)
	}
	capEffective = func() (uint64, error) { return 0, nil }
	err = Run(t.Context(), Config{Algorithms: []Algorithm{{Algo: "olia"}}}, Options{})
	if !errors.Is(err, ErrNotPrivileged) {
		t.Fatalf("Run without privileges: %v", err)
	}
}

// FuzzParseConfig: the parser never panics; what it accepts is valid, can
// be written back and reads the same; what it refuses comes with at least
// one problem to show. Seeds: testdata/fuzz/FuzzParseConfig (run as unit
// tests by `go test`) plus the examples in testdata/config.
func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/config/*.yaml")
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 || err.Error() == "" {
				t.Fatalf("error without problems: %T %v", err, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted but invalid: %v", err)
		}
		r := c.Resolve()
		if err := r.Validate(); err != nil {
			t.Fatalf("valid config resolves to an invalid one: %v\n%+v", err, r)
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		c2, err := ParseConfig(out)
		if err != nil {
			t.Fatalf("re-parsing what was accepted:\n%s\n%v", out, err)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip changed the config:\n%#v\n%#v", c, c2)
		}
	})
}
