// SPDX-License-Identifier: Apache-2.0

package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func testApp(got *[]string) *App {
	return (&App{
		Name:    "prog",
		Summary: "a test program",
		Commands: []Command{
			{Name: "ok", Summary: "succeeds", Flags: func(fs *flag.FlagSet) Action {
				n := fs.Int("n", 0, "a number")
				return func(_ []string, out io.Writer) error {
					fmt.Fprintf(out, "n=%d", *n)
					return nil
				}
			}},
			{Name: "fail", Summary: "fails", Flags: func(*flag.FlagSet) Action {
				return func([]string, io.Writer) error { return errors.New("it broke: do X") }
			}},
			{Name: "needs", Summary: "has a required flag", Required: []string{"x", "a|b"}, Flags: func(fs *flag.FlagSet) Action {
				fs.String("x", "", "the `TOKEN`, as `prog ok` shows it")
				fs.String("a", "", "one")
				fs.Duration("b", 0, "other")
				fs.Bool("on", true, "a switch that is on")
				return func([]string, io.Writer) error { return Usagef("--x is required") }
			}},
			{Name: "intr", Summary: "interrupted", Flags: func(*flag.FlagSet) Action {
				return func([]string, io.Writer) error { return fmt.Errorf("run: %w", ErrInterrupted) }
			}},
			{Name: "files", Summary: "takes files", Args: "FILE...", Flags: func(fs *flag.FlagSet) Action {
				dir := fs.String("out", "", "where: `DIR`")
				return func(args []string, out io.Writer) error {
					fmt.Fprintf(out, "%s -> %s", strings.Join(args, ","), *dir)
					return nil
				}
			}},
			{Name: "pick", Summary: "takes a name", Args: "NAME", Values: []string{"alpha", "beta"}, Flags: func(*flag.FlagSet) Action {
				return func(args []string, out io.Writer) error { fmt.Fprint(out, strings.Join(args, ",")); return nil }
			}},
			{Name: "group", Summary: "has subcommands", Help: "Group help.", Sub: []Command{
				{Name: "one", Summary: "the first", Required: []string{"x"}, Flags: func(fs *flag.FlagSet) Action {
					x := fs.Bool("x", false, "a switch")
					return func(_ []string, out io.Writer) error { fmt.Fprintf(out, "one x=%v", *x); return nil }
				}},
				{Name: "two", Summary: "the second", Flags: func(*flag.FlagSet) Action {
					return func([]string, io.Writer) error { return errors.New("two failed") }
				}},
			}},
			{Name: "secret", Hidden: true, Positional: true, Flags: func(*flag.FlagSet) Action {
				return func(args []string, _ io.Writer) error { *got = args; return nil }
			}},
		},
	}).WithDocs()
}

// The exit codes are the contract documented on the package.
func TestRunExitCodes(t *testing.T) {
	var hidden []string
	cases := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{nil, 2, "", "usage: prog COMMAND"},
		{[]string{"--help"}, 0, "usage: prog COMMAND", ""},
		{[]string{"-h"}, 0, "usage: prog COMMAND", ""},
		{[]string{"help"}, 0, "usage: prog COMMAND", ""},
		{[]string{"help", "ok"}, 0, "usage: prog ok [--n N]", ""},
		{[]string{"help", "group"}, 0, "usage: prog group SUBCOMMAND", ""},
		{[]string{"help", "group", "one"}, 0, "usage: prog group one --x", ""},
		{[]string{"group", "help", "one"}, 0, "usage: prog group one --x", ""},
		{[]string{"help", "nope"}, 2, "", `prog: no command "nope": ok, fail`},
		{[]string{"help", "ok", "more"}, 2, "", `prog ok has no subcommand "more"`},
		{[]string{"nope"}, 2, "", "prog: unknown command \"nope\": ok, fail, needs, intr, files, pick, group or completion\n`prog -h` shows the usage\n"},
		{[]string{"ok", "--n", "3"}, 0, "n=3", ""},
		{[]string{"ok", "-h"}, 0, "usage: prog ok [--n N]\n\nflags:\n  --n N\n        a number\n", ""},
		{[]string{"ok", "--help"}, 0, "usage: prog ok [--n N]", ""},
		{[]string{"ok", "extra"}, 2, "", `prog ok: unexpected argument "extra"`},
		// One line, the flag with two dashes, then where the usage is.
		{[]string{"ok", "--bad"}, 2, "", "prog ok: flag provided but not defined: --bad\n`prog ok -h` shows the usage\n"},
		{[]string{"ok", "-bad"}, 2, "", "flag provided but not defined: --bad\n"},
		{[]string{"ok", "--n", "x"}, 2, "", `prog ok: invalid value "x" for flag --n: want a whole number`},
		{[]string{"ok", "--n"}, 2, "", `prog ok: flag needs an argument: --n`},
		{[]string{"needs", "--on=maybe"}, 2, "", `invalid boolean value "maybe" for --on: want true or false`},
		{[]string{"needs", "--b", "soon"}, 2, "", `invalid value "soon" for flag --b: want a duration such as 500ms`},
		{[]string{"needs"}, 2, "", "prog needs: --x is required\n`prog needs -h` shows the usage\n"},
		{[]string{"fail"}, 1, "", "prog fail: it broke: do X\n"},
		{[]string{"intr"}, 130, "", "prog intr: run: interrupted"},
		{[]string{"files", "a", "--out", "d", "b"}, 0, "a,b -> d", ""},
		{[]string{"group"}, 2, "", "prog group: say what to do: one or two\n`prog group -h` shows the usage\n"},
		{[]string{"group", "-h"}, 0, "Group help.", ""},
		{[]string{"group", "--help"}, 0, "  one --x\n", ""},
		{[]string{"group", "three"}, 2, "", `prog group: unknown subcommand "three": one or two`},
		{[]string{"group", "one", "--x"}, 0, "one x=true", ""},
		{[]string{"group", "one", "-h"}, 0, "usage: prog group one --x\n", ""},
		{[]string{"group", "two"}, 1, "", "prog group two: two failed"},
		{[]string{"secret", "a", "b"}, 0, "", ""},
		{[]string{"completion"}, 2, "", "say which shell"},
		{[]string{"completion", "fish"}, 2, "", `unknown shell "fish"`},
		{[]string{"completion", "-h"}, 0, "usage: prog completion bash|zsh\n", ""},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := testApp(&hidden).Run(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
		}
		// Help is on stdout alone; an error on stderr alone, once.
		if c.code == 0 && stderr.Len() > 0 || c.code != 0 && stdout.Len() > 0 && len(c.args) > 0 {
			t.Errorf("%q: exit %d with stdout %q and stderr %q", c.args, code, stdout.String(), stderr.String())
		}
		if n := strings.Count(stderr.String(), "\n"); c.code != 0 && len(c.args) > 0 && n > 2 {
			t.Errorf("%q: %d lines on stderr, want the error and the pointer to -h:\n%s", c.args, n, stderr.String())
		}
	}
	if strings.Join(hidden, " ") != "a b" {
		t.Errorf("hidden command got %q", hidden)
	}
	var usage bytes.Buffer
	testApp(&hidden).Usage(&usage)
	if strings.Contains(usage.String(), "secret") || strings.Contains(usage.String(), "\n  man ") {
		t.Errorf("usage lists a hidden command:\n%s", usage.String())
	}
}

func TestTables(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b, "NAME", "N")
	tb.Row("long-name", 1)
	tb.Row("x", 22)
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "NAME       N\nlong-name  1\nx          22\n"
	if b.String() != want {
		t.Errorf("left table:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	tb = NewRightTable(&b, "NAME", "N")
	tb.Row("long-name", 1)
	tb.Row("x", 22)
	tb.Flush()
	want = "       NAME   N\n  long-name   1\n          x  22\n"
	if b.String() != want {
		t.Errorf("right table:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	if err := WriteJSON(&b, map[string]int{"a": 1}); err != nil || b.String() != "{\n  \"a\": 1\n}\n" {
		t.Errorf("json: %q %v", b.String(), err)
	}
}

// The man page lists every visible command path with its flags and the
// exit codes, and is valid roff (checked with groff when it is installed).
func TestMan(t *testing.T) {
	var hidden []string
	dir := t.TempDir()
	var stderr bytes.Buffer
	if code := testApp(&hidden).Run([]string{"man", dir}, io.Discard, &stderr); code != 0 {
		t.Fatalf("man: exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "prog.1"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{".TH PROG 1", `prog \- a test program`, `.B prog group one`, `.B \-\-x`, `.B \-\-n \fIN\fR`,
		`.I "\-\-x TOKEN (\-\-a VALUE | \-\-b DURATION) [\-\-on=false]"`, "the TOKEN, as `prog ok` shows it", "(default true)",
		`.I "FILE... [\-\-out DIR]"`, ".SH EXIT STATUS", ".B 130",
		// An indented help line (a command to type) stays as written.
		".nf\n  bash: source <(prog completion bash)\n  zsh:  prog completion zsh > \"${fpath[1]}/_prog\"\n.fi\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("man page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "secret") {
		t.Errorf("man page shows a hidden command")
	}
	if _, err := exec.LookPath("groff"); err == nil {
		out, err := exec.Command("groff", "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, "prog.1")).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("groff: %v\n%s", err, out)
		}
	}
}

// The completion scripts are valid shell and offer the right words.
func TestCompletion(t *testing.T) {
	var hidden []string
	for _, shell := range []string{"bash", "zsh"} {
		var out bytes.Buffer
		if err := testApp(&hidden).WriteCompletion(&out, shell); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"group", "--out", "--x", "alpha beta"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s completion lacks %q", shell, want)
			}
		}
		if strings.Contains(out.String(), "secret") {
			t.Errorf("%s completion offers a hidden command", shell)
		}
		if _, err := exec.LookPath(shell); err != nil {
			t.Logf("%s not installed: syntax not checked", shell)
			continue
		}
		f := filepath.Join(t.TempDir(), "c")
		if err := os.WriteFile(f, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(shell, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, b)
		}
	}
	// bash: what the completion function offers after "prog group one --".
	var out bytes.Buffer
	testApp(&hidden).WriteCompletion(&out, "bash")
	script := out.String() + `
COMP_WORDS=(prog group one --); COMP_CWORD=3; _prog; echo "${COMPREPLY[@]}"
COMP_WORDS=(prog gr); COMP_CWORD=1; _prog; echo "${COMPREPLY[@]}"
COMP_WORDS=(prog pick al); COMP_CWORD=2; _prog; echo "${COMPREPLY[@]}"
`
	b, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, b)
	}
	if got := string(b); got != "--x\ngroup\nalpha\n" {
		t.Errorf("bash completion offered %q, want %q", got, "--x\ngroup\nalpha\n")
	}
}

// Go's flag package prints a parse error, and the whole usage, to the flag
// set's output (os.Stderr unless told) before returning it: the framework
// must silence that, or the error shows twice.
func TestNothingPrintedBehindRun(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	var hidden []string
	for _, args := range [][]string{{"ok", "--bad"}, {"ok", "--n", "x"}, {"ok", "-h"}, {"files", "a", "--out"}, {"group", "one", "--help"}} {
		testApp(&hidden).Run(args, io.Discard, io.Discard)
	}
	os.Stdout, os.Stderr = stdout, stderr
	w.Close()
	if b, _ := io.ReadAll(r); len(b) > 0 {
		t.Errorf("printed outside Run's writers:\n%s", b)
	}
}
