package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func testApp(got *[]string) *App {
	return &App{
		Name: "prog",
		Commands: []Command{
			{Name: "ok", Summary: "succeeds", Run: func(args []string, out io.Writer) error {
				fs := NewFlags("prog", "ok", "[--n N]")
				n := fs.Int("n", 0, "a number")
				if err := Parse(fs, args); err != nil {
					return err
				}
				fmt.Fprintf(out, "n=%d", *n)
				return nil
			}},
			{Name: "fail", Summary: "fails", Run: func([]string, io.Writer) error { return errors.New("it broke: do X") }},
			{Name: "intr", Summary: "interrupted", Run: func([]string, io.Writer) error { return fmt.Errorf("run: %w", ErrInterrupted) }},
		},
		Hidden: []Command{{Name: "secret", Run: func(args []string, _ io.Writer) error { *got = args; return nil }}},
	}
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
		{[]string{"nope"}, 2, "", `prog: unknown command "nope"`},
		{[]string{"ok", "--n", "3"}, 0, "n=3", ""},
		{[]string{"ok", "-h"}, 0, "", ""}, // the flag set prints its usage to os.Stderr
		{[]string{"ok", "extra"}, 1, "", `prog ok: unexpected argument "extra"`},
		{[]string{"ok", "--bad"}, 1, "", "flag provided but not defined: -bad"},
		{[]string{"fail"}, 1, "", "prog fail: it broke: do X"},
		{[]string{"intr"}, 130, "", "prog intr: run: interrupted"},
		{[]string{"secret", "a", "b"}, 0, "", ""},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := testApp(&hidden).Run(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
		}
	}
	if strings.Join(hidden, " ") != "a b" {
		t.Errorf("hidden command got %q", hidden)
	}
	var usage bytes.Buffer
	testApp(&hidden).Usage(&usage)
	if strings.Contains(usage.String(), "secret") {
		t.Errorf("usage lists a hidden command:\n%s", usage.String())
	}
}

func TestParseInterspersed(t *testing.T) {
	fs := NewFlags("prog", "run", "FILE... [--out DIR]")
	out := fs.String("out", "", "")
	pos, err := ParseInterspersed(fs, []string{"a.yaml", "--out", "dir", "b.yaml"})
	if err != nil || *out != "dir" || strings.Join(pos, ",") != "a.yaml,b.yaml" {
		t.Fatalf("got %q, out %q, err %v", pos, *out, err)
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
