// SPDX-License-Identifier: Apache-2.0

package clitest

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
)

func nop(fs *flag.FlagSet) cli.Action { return func([]string, io.Writer) error { return nil } }

func app(required ...string) *cli.App {
	return (&cli.App{Name: "prog", Summary: "a test program", Commands: []cli.Command{
		{Name: "get", Summary: "gets", Required: required, Flags: func(fs *flag.FlagSet) cli.Action {
			fs.String("token", "", "the connection's token, hex, as `prog list` or `ss -Mi` shows it")
			fs.String("netns", "", "named network namespace (`ip netns list`)")
			fs.Duration("for", 0, "how long")
			fs.Bool("json", false, "JSON output")
			fs.Bool("peeks", true, "peek")
			return nop(fs)
		}},
		{Name: "grp", Summary: "a group", Sub: []cli.Command{
			{Name: "one", Summary: "the first", Args: "FILE...", Flags: func(fs *flag.FlagSet) cli.Action {
				fs.String("out", "", "results `DIR`")
				return nop(fs)
			}},
		}},
	}}).WithDocs()
}

// The framework keeps every promise for an App declared as the binaries
// declare theirs, and a Required flag that does not exist is reported.
func TestProblems(t *testing.T) {
	if ps := Problems(app("token")); len(ps) > 0 {
		t.Errorf("a well-declared app: %s", strings.Join(ps, "\n"))
	}
	single := &cli.App{Name: "demo", Summary: "one command", Single: &cli.Command{Name: "demo", Flags: func(fs *flag.FlagSet) cli.Action {
		fs.Duration("for", 20*time.Second, "how long")
		return nop(fs)
	}}}
	if ps := Problems(single); len(ps) > 0 {
		t.Errorf("a single-command app: %s", strings.Join(ps, "\n"))
	}
	ps := Problems(app("token", "nope|for"))
	if len(ps) != 1 || !strings.Contains(ps[0], "Required names --nope") {
		t.Errorf("a Required flag that does not exist: %q", ps)
	}
}

// What Go's flag package printed for `mptcp-cc pathctl -h` before the
// framework rendered flags itself: every fault is found.
const goStyle = `usage: mptcp-cc pathctl --token TOKEN [--netns NAME]

  -for duration
    	stop after this long (0: when the connection closes)
  -json
    	one JSON object per decision
  -netns ip netns list
    	named network namespace of the connection (ip netns list; default: this one)
  -token mptcp-cc subflows
    	the connection's token, hex, as mptcp-cc subflows or ` + "`ss -Mi`" + ` shows it
`

func TestHelpProblems(t *testing.T) {
	flags := map[string]bool{"for": false, "json": true, "netns": false, "token": false}
	got := strings.Join(HelpProblems("mptcp-cc pathctl", flags, goStyle), "\n")
	for _, want := range []string{
		`"  -for duration" is not a flag line`,
		`"  -netns ip netns list" is not a flag line`,
		`"  -token mptcp-cc subflows" is not a flag line`,
		"the synopsis lacks --for", "the synopsis lacks --json",
		"the flag list lacks --token",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("not reported: %s", want)
		}
	}
	if strings.Contains(got, "the synopsis lacks --token") || strings.Contains(got, "the synopsis lacks --netns") {
		t.Errorf("flags in the synopsis reported missing:\n%s", got)
	}
	const fixed = "usage: mptcp-cc pathctl --token TOKEN [--for DURATION] [--json] [--netns NAME]\n\nflags:\n" +
		"  --for DURATION\n        stop\n  --json\n        JSON\n  --netns NAME\n        ns\n  --token TOKEN\n        the token\n"
	if ps := HelpProblems("mptcp-cc pathctl", flags, fixed); len(ps) > 0 {
		t.Errorf("the fixed help: %q", ps)
	}
	if ps := HelpProblems("mptcp-cc pathctl", flags, strings.Replace(fixed, "[--json]", "[-json]", 1)); len(ps) != 2 {
		t.Errorf("a single-dash flag in the synopsis: %q", ps)
	}
	if ps := HelpProblems("mptcp-cc pathctl", flags, strings.Replace(fixed, "  --json\n", "  --json BOOL\n", 1)); len(ps) == 0 || !strings.Contains(ps[0], "the switch --json shows a value BOOL") {
		t.Errorf("a switch with a value: %q", ps)
	}
}
