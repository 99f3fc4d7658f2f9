// SPDX-License-Identifier: Apache-2.0

// Package cli is the one command framework of the project's binaries
// (mptcp-cc, mptcp-lab, mptcp-xfer). A binary is an App: a list of
// Commands, each declared as data (name, summary, usage, flags, whether
// it takes positional arguments, subcommands). From that one declaration
// come the dispatch, the flag parsing, `-h` on every command, the man
// pages (WriteMan) and the shell completions (WriteCompletion), so they
// cannot drift apart.
//
// Exit codes, the same for every binary:
//
//	0   success, or --help
//	1   the command failed (the message names the problem and the fix),
//	    including a flag value the command itself refused (an unknown
//	    algorithm, a prefix longer than the address, a token not in hex)
//	2   usage error: no, unknown or incomplete command; an unknown flag, a
//	    flag value of the wrong type (--watch abc), an unexpected
//	    argument, a required flag missing (the action returns Usagef)
//	130 interrupted (the command returned an error wrapping ErrInterrupted)
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Action is what a command does once its flags are parsed: args are the
// positional arguments (always empty for a command without Positional).
type Action func(args []string, out io.Writer) error

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string // one line, for the command list
	Usage   string // the synopsis after "PROG NAME", e.g. "--algo NAME [--lisa]"
	// Help is further text for `-h` and the man page (optional).
	Help string
	// Flags declares the command's flags on fs and returns what runs. It
	// must do nothing else: the man page and completions call it to learn
	// the flags. Nil for a command with subcommands.
	Flags func(fs *flag.FlagSet) Action
	// Positional: the command takes arguments besides its flags, and flags
	// may follow them (mptcp-lab run FILE --out DIR).
	Positional bool
	// Values are what a positional argument usually is, for the shell
	// completions (without them, file names are completed).
	Values []string
	// Sub are subcommands (mptcp-cc policy attach).
	Sub []Command
	// Hidden commands run but are listed nowhere (internal helpers).
	Hidden bool
}

// App is a binary made of subcommands.
type App struct {
	Name     string
	Summary  string // one line: what the program is, for the man page
	Commands []Command
	// Footer is printed after the command list in the usage text.
	Footer string
}

// ErrInterrupted makes Run exit with 130, as shells do after Ctrl-C.
var ErrInterrupted = errors.New("interrupted")

// errUsage marks errors that exit with 2.
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

// Usagef is the error an action returns when it was called wrongly (a
// required flag is missing): Run exits with 2, as for an unknown flag, so
// scripts can tell a wrong command line from a failed command.
func Usagef(format string, args ...any) error { return errUsage{fmt.Sprintf(format, args...)} }

// Usage writes the command list.
func (a *App) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s COMMAND [flags]\n\ncommands:\n", a.Name)
	writeList(w, a.Commands)
	fmt.Fprintf(w, "\n`%s COMMAND -h` shows a command's flags.", a.Name)
	if a.Footer != "" {
		fmt.Fprintf(w, " %s", a.Footer)
	}
	fmt.Fprintln(w)
}

func writeList(w io.Writer, cmds []Command) {
	width := 0
	for _, c := range visible(cmds) {
		width = max(width, len(c.Name))
	}
	for _, c := range visible(cmds) {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
}

func visible(cmds []Command) []Command {
	var out []Command
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c)
		}
	}
	return out
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
	c, ok := find(a.Commands, args[0])
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n", a.Name, args[0])
		a.Usage(stderr)
		return 2
	}
	path, err := a.run(c, c.Name, args[1:], stdout)
	var ue errUsage
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrInterrupted):
		fmt.Fprintf(stderr, "%s %s: %v\n", a.Name, path, err)
		return 130
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s %s: %v\n", a.Name, path, err)
		return 2
	default:
		fmt.Fprintf(stderr, "%s %s: %v\n", a.Name, path, err)
		return 1
	}
}

// run runs c (named path, e.g. "policy attach") and returns the path of
// the command that ran, for error messages.
func (a *App) run(c Command, path string, args []string, out io.Writer) (string, error) {
	if len(c.Sub) > 0 {
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			a.subUsage(out, c, path)
			if len(args) == 0 {
				return path, errUsage{fmt.Sprintf("say what to do: %s", names(c.Sub))}
			}
			return path, flag.ErrHelp
		}
		sub, ok := find(c.Sub, args[0])
		if !ok {
			return path, errUsage{fmt.Sprintf("unknown subcommand %q: %s (`%s %s -h`)", args[0], names(c.Sub), a.Name, path)}
		}
		return a.run(sub, path+" "+sub.Name, args[1:], out)
	}
	fs := a.flagSet(c, path)
	action := c.Flags(fs)
	var pos []string
	var err error
	if c.Positional {
		pos, err = ParseInterspersed(fs, args)
	} else {
		err = Parse(fs, args)
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return path, errUsage{err.Error()}
	}
	if err != nil {
		return path, err
	}
	return path, action(pos, out)
}

func (a *App) subUsage(w io.Writer, c Command, path string) {
	fmt.Fprintf(w, "usage: %s %s SUBCOMMAND [flags]\n\n", a.Name, path)
	for _, s := range visible(c.Sub) {
		fmt.Fprintf(w, "  %s %s\n        %s\n", s.Name, s.Usage, s.Summary)
	}
	if c.Help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Help))
	}
}

// flagSet makes the flag set of one command: errors are returned, not
// printed and exited; -h prints the synopsis, the help text and the flags.
func (a *App) flagSet(c Command, path string) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s %s %s\n", a.Name, path, c.Usage)
		if c.Help != "" {
			fmt.Fprintf(fs.Output(), "\n%s\n\n", strings.TrimSpace(c.Help))
		}
		fs.PrintDefaults()
	}
	return fs
}

// Main runs the App on os.Args and exits with its code.
func (a *App) Main() {
	os.Exit(a.Run(os.Args[1:], os.Stdout, os.Stderr))
}

func find(cmds []Command, name string) (Command, bool) {
	for _, c := range cmds {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

func names(cmds []Command) string {
	var n []string
	for _, c := range visible(cmds) {
		n = append(n, c.Name)
	}
	if len(n) < 2 {
		return strings.Join(n, "")
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
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
