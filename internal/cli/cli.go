// Package cli is the one command framework of the project's binaries
// (mptcp-cc, mptcp-lab, mptcp-xfer): subcommand dispatch, flag sets whose
// errors come back instead of exiting, and the two output forms every
// listing offers (an aligned table, or JSON with --json).
//
// Exit codes, the same for every binary:
//
//	0   success, or --help
//	1   the command failed (the message names the problem and the fix)
//	2   usage error: no or unknown command
//	130 interrupted (the command returned an error wrapping ErrInterrupted)
package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// Command is one subcommand. Run gets the arguments after the command's
// name and the writer for its normal output; errors go to the App.
type Command struct {
	Name    string
	Summary string
	Run     func(args []string, out io.Writer) error
}

// App is a binary made of subcommands.
type App struct {
	Name     string
	Commands []Command
	// Footer is printed after the command list in the usage text.
	Footer string
	// Hidden commands run but are not listed (internal helpers such as
	// mptcp-lab's janitor).
	Hidden []Command
}

// ErrInterrupted makes Main exit with 130, as shells do after Ctrl-C.
var ErrInterrupted = errors.New("interrupted")

// Usage writes the command list.
func (a *App) Usage(w io.Writer) {
	width := 0
	for _, c := range a.Commands {
		width = max(width, len(c.Name))
	}
	fmt.Fprintf(w, "usage: %s COMMAND [flags]\n\ncommands:\n", a.Name)
	for _, c := range a.Commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\n`%s COMMAND -h` shows a command's flags.", a.Name)
	if a.Footer != "" {
		fmt.Fprintf(w, " %s", a.Footer)
	}
	fmt.Fprintln(w)
}

// Run dispatches args (without the program name) and returns the exit code.
func (a *App) Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		a.Usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		a.Usage(stdout)
		return 0
	}
	c, ok := a.find(args[0])
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n", a.Name, args[0])
		a.Usage(stderr)
		return 2
	}
	err := c.Run(args[1:], stdout)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrInterrupted):
		fmt.Fprintf(stderr, "%s %s: %v\n", a.Name, c.Name, err)
		return 130
	default:
		fmt.Fprintf(stderr, "%s %s: %v\n", a.Name, c.Name, err)
		return 1
	}
}

// Main runs the App on os.Args and exits with its code.
func (a *App) Main() {
	os.Exit(a.Run(os.Args[1:], os.Stdout, os.Stderr))
}

func (a *App) find(name string) (Command, bool) {
	for _, list := range [][]Command{a.Commands, a.Hidden} {
		for _, c := range list {
			if c.Name == name {
				return c, true
			}
		}
	}
	return Command{}, false
}

// NewFlags makes a flag set for "PROG NAME" whose errors are returned, not
// printed and exited; -h prints "usage: PROG NAME ARGS" and the flags.
func NewFlags(prog, name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s %s %s\n", prog, name, args)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses flags and refuses positional arguments.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags start with --)", strings.Join(fs.Args(), " "))
	}
	return nil
}

// ParseInterspersed parses flags that may come after the positional
// arguments (mptcp-lab run FILE --out DIR) and returns the positional ones.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// WriteJSON writes v as indented JSON, the form of every --json listing.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Table is an aligned text table: Row per line, then Flush.
type Table struct {
	tw *tabwriter.Writer
	// right: every cell, the last included, ends in a tab, which is what
	// tabwriter needs to right-align the last column.
	right bool
}

// NewTable starts a table with its header cells.
func NewTable(w io.Writer, header ...string) *Table {
	t := &Table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.Row(anySlice(header)...)
	return t
}

// NewRightTable is NewTable with cells aligned right (numeric tables).
func NewRightTable(w io.Writer, header ...string) *Table {
	t := &Table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight), right: true}
	t.Row(anySlice(header)...)
	return t
}

// Row adds one line; cells are formatted with fmt.Sprint.
func (t *Table) Row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	if t.right {
		fmt.Fprint(t.tw, "\t")
	}
	fmt.Fprintln(t.tw)
}

// Flush writes the table.
func (t *Table) Flush() error { return t.tw.Flush() }

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
