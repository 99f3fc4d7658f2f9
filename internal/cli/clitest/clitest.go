// SPDX-License-Identifier: Apache-2.0

// Package clitest checks, from the outside, that a cli.App keeps the
// framework's promises for every command: `-h` and `help CMD` go to stdout
// with exit 0; the help shows flags with two dashes and a value name, with
// no placeholder artefacts (Go's flag package turned "as `mptcp-cc
// subflows` shows it" into "-token mptcp-cc subflows"); the synopsis, the
// man page and both completion scripts name every flag; a bad flag is one
// error line and a pointer to -h, exit 2.
//
// A main package cannot be imported, so each binary's tests call Check on
// its own App in-process; internal/cli's tests check the checker.
package clitest

import (
	"bytes"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
)

// Check reports every problem of a as a test error.
func Check(t testing.TB, a *cli.App) {
	t.Helper()
	for _, p := range Problems(a) {
		t.Error(p)
	}
}

// Problems lists what a does not keep of the promises above.
func Problems(a *cli.App) []string {
	var ps []string
	var man, bash, zsh bytes.Buffer
	if err := a.WriteMan(&man); err != nil {
		ps = append(ps, fmt.Sprintf("man page: %v", err))
	}
	if err := a.WriteCompletion(&bash, "bash"); err != nil {
		ps = append(ps, fmt.Sprintf("bash completion: %v", err))
	}
	if err := a.WriteCompletion(&zsh, "zsh"); err != nil {
		ps = append(ps, fmt.Sprintf("zsh completion: %v", err))
	}
	d := docs{a: a, man: man.String(), bash: bash.String(), zsh: zsh.String()}
	if a.Single != nil {
		return append(ps, d.leaf(nil, *a.Single)...)
	}
	for _, h := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		out, errOut, code := run(a, h...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: "+a.Name+" ") {
			ps = append(ps, fmt.Sprintf("%s %s: exit %d, stdout %q, stderr %q; want the usage on stdout, exit 0", a.Name, h[0], code, out, errOut))
		}
	}
	return append(ps, d.group(nil, cli.Command{Sub: a.Commands})...)
}

type docs struct {
	a              *cli.App
	man, bash, zsh string
}

func run(a *cli.App, args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = a.Run(args, &o, &e)
	return o.String(), e.String(), code
}

func (d docs) line(path []string) string {
	return strings.Join(append([]string{d.a.Name}, path...), " ")
}

// group checks the help of a group (the App at path nil) and its commands.
func (d docs) group(path []string, g cli.Command) []string {
	var ps []string
	if len(path) > 0 {
		out, errOut, code := run(d.a, append(path, "-h")...)
		help, _, _ := run(d.a, append([]string{"help"}, path...)...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: "+d.line(path)+" ") {
			ps = append(ps, fmt.Sprintf("%s -h: exit %d, stdout %q, stderr %q; want its usage on stdout, exit 0", d.line(path), code, out, errOut))
		}
		if help != out {
			ps = append(ps, fmt.Sprintf("help %s differs from %s -h:\n%s", strings.Join(path, " "), d.line(path), help))
		}
		for _, s := range g.Sub {
			if !s.Hidden && !strings.Contains(out, "\n  "+s.Name) {
				ps = append(ps, fmt.Sprintf("%s -h does not list %s", d.line(path), s.Name))
			}
		}
	}
	for _, c := range g.Sub {
		if c.Hidden {
			continue
		}
		p := append(append([]string(nil), path...), c.Name)
		if c.Flags == nil {
			ps = append(ps, d.group(p, c)...)
		} else {
			ps = append(ps, d.leaf(p, c)...)
		}
	}
	return ps
}

// flagSet declares c's flags: name -> whether it is a switch.
func flagSet(c cli.Command) map[string]bool {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	c.Flags(fs)
	m := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		m[f.Name] = ok && b.IsBoolFlag()
	})
	return m
}

// leaf checks one runnable command (path nil: a Single app's).
func (d docs) leaf(path []string, c cli.Command) []string {
	var ps []string
	line := d.line(path)
	flags := flagSet(c)
	for _, r := range c.Required {
		for _, n := range strings.Split(r, "|") {
			if _, ok := flags[n]; !ok {
				ps = append(ps, fmt.Sprintf("%s: Required names --%s, which it does not declare", line, n))
			}
		}
	}
	out, errOut, code := run(d.a, append(path, "-h")...)
	if code != 0 || errOut != "" {
		ps = append(ps, fmt.Sprintf("%s -h: exit %d, stderr %q; want the help on stdout, exit 0", line, code, errOut))
	}
	ps = append(ps, HelpProblems(line, flags, out)...)
	if len(path) > 0 {
		if help, _, _ := run(d.a, append([]string{"help"}, path...)...); help != out {
			ps = append(ps, fmt.Sprintf("help %s differs from %s -h:\n%s", strings.Join(path, " "), line, help))
		}
	}

	// One error line naming the flag, then the pointer to -h; exit 2.
	const bogus = "--no-such-flag-clitest"
	out, errOut, code = run(d.a, append(path, bogus)...)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 2 || out != "" || len(lines) != 2 || !strings.Contains(lines[0], bogus) || !strings.Contains(lines[1], line+" -h") {
		ps = append(ps, fmt.Sprintf("%s %s: exit %d, stdout %q, stderr %q; want exit 2, one error line naming %s and a pointer to `%s -h`", line, bogus, code, out, errOut, bogus, line))
	}

	man := section(d.man, ".B "+esc(line)+"\n", ".B "+esc(d.a.Name)+" ")
	bash := section(d.bash, fmt.Sprintf("\t%q) words=", strings.Join(path, " ")), "\n")
	zsh := section(d.zsh, fmt.Sprintf("\t%q)\n\t\t_arguments", strings.Join(path, " ")), ";;")
	for n := range flags {
		if !strings.Contains(man, `.B \-\-`+esc(n)+"\n") && !strings.Contains(man, `.B \-\-`+esc(n)+` \fI`) {
			ps = append(ps, fmt.Sprintf("%s: the man page lacks --%s", line, n))
		}
		if !regexp.MustCompile(`[" ]--` + regexp.QuoteMeta(n) + `[" ]`).MatchString(bash) {
			ps = append(ps, fmt.Sprintf("%s: the bash completion lacks --%s", line, n))
		}
		if !strings.Contains(zsh, "'--"+n+"[") {
			ps = append(ps, fmt.Sprintf("%s: the zsh completion lacks --%s", line, n))
		}
	}
	return ps
}

// section is the text of s from the line that starts with start to the next
// end after it ("" when there is no such line).
func section(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}

func esc(s string) string { return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s) }

var (
	// A flag's line in the flag list: two dashes, then an upper-case value
	// name for a flag that takes a value.
	flagLineRE = regexp.MustCompile(`^  --([A-Za-z0-9][A-Za-z0-9._-]*)(?: ([A-Z][A-Z0-9_:=.|-]*))?$`)
	flagHeadRE = regexp.MustCompile(`^ {1,4}-`)
	// A flag written with one dash in the synopsis.
	singleDashRE = regexp.MustCompile(`(^|[\s\[(|])-[A-Za-z]`)
)

// HelpProblems checks the -h output of the command line `line`, whose flags
// are flags (name -> whether it is a switch): the synopsis (the lines up to
// the first blank one) names every flag with two dashes, and every line of
// the flag list is "--name" or "--name VALUE".
func HelpProblems(line string, flags map[string]bool, out string) []string {
	var ps []string
	if !strings.HasPrefix(out, "usage: "+line) {
		return []string{fmt.Sprintf("%s -h does not start with %q:\n%s", line, "usage: "+line, out)}
	}
	syn, _, _ := strings.Cut(out, "\n\n")
	syn = strings.TrimPrefix(syn, "usage: "+line)
	if singleDashRE.MatchString(syn) {
		ps = append(ps, fmt.Sprintf("%s: the synopsis shows a flag with one dash: %s", line, syn))
	}
	listed := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		// A flag's line is indented 2 (Go's were too); its description 8.
		if !flagHeadRE.MatchString(l) {
			continue
		}
		m := flagLineRE.FindStringSubmatch(l)
		switch {
		case m == nil:
			ps = append(ps, fmt.Sprintf("%s -h: %q is not a flag line (\"  --name\" or \"  --name VALUE\")", line, l))
		case flags[m[1]] && m[2] != "":
			ps = append(ps, fmt.Sprintf("%s -h: the switch --%s shows a value %s", line, m[1], m[2]))
		default:
			if isSwitch, ok := flags[m[1]]; ok && !isSwitch && m[2] == "" {
				ps = append(ps, fmt.Sprintf("%s -h: --%s takes a value and shows none", line, m[1]))
			}
			listed[m[1]] = true
		}
	}
	for n := range flags {
		if !regexp.MustCompile(`(^|[\s\[(])--` + regexp.QuoteMeta(n) + `([\s\]=)]|$)`).MatchString(syn) {
			ps = append(ps, fmt.Sprintf("%s: the synopsis lacks --%s:%s", line, n, syn))
		}
		if !listed[n] {
			ps = append(ps, fmt.Sprintf("%s -h: the flag list lacks --%s", line, n))
		}
	}
	return ps
}
