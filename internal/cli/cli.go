// SPDX-License-Identifier: Apache-2.0

// Package cli is the one command framework of the project's binaries
// (mptcp-cc, mptcp-lab, mptcp-xfer, mptcp-demo). A binary is an App: a list
// of Commands (or one Single command), each declared as data (name, summary,
// flags, which flags are required, its positional arguments, subcommands).
// From that one declaration come the dispatch, the flag parsing, the
// synopsis, `-h` and `help CMD` on every command, the man pages (WriteMan)
// and the shell completions (WriteCompletion), so they cannot drift apart.
//
// A flag's value is named in the synopsis by the first back-quoted
// upper-case word of its usage text ("cgroup v2 `DIR`" gives --cgroup DIR),
// else by its type (DURATION, N, NUMBER, VALUE); other back-quoted text (a
// command to run) is shown as written. Flags are shown with two dashes.
//
// Help (-h, --help, `PROG help CMD`) goes to stdout and exits 0. A usage
// error prints one line naming the mistake and a pointer to -h, on stderr.
// Exit codes, the same for every binary, one per kind of mistake. 2 is
// for what the command's declaration alone shows to be wrong, 1 for what
// the command found wrong by checking further:
//
//	0   success, or help
//	1   the command failed (the message names the problem and the fix),
//	    including a value it checked and refused: out of range
//	    (--max-subflows 0), not in the form wanted (--token zz, --dst
//	    10.0.0.0/33), a name not registered, a file, cgroup or namespace
//	    that does not exist, a path not on bpffs
//	2   usage error: no, unknown or incomplete command or subcommand; an
//	    unknown flag; a flag value of the wrong type (--watch abc); a value
//	    not among the choices the flag lists (top --sort bogus, load --algo
//	    cubic2, completion fish); a required flag or argument missing, an
//	    unexpected argument, flags that exclude each other, a parameter that
//	    the chosen algorithm does not read (the action returns Usagef)
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
// positional arguments (always empty for a command that takes none).
type Action func(args []string, out io.Writer) error

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string // one line, for the command list
	// Args is the synopsis of the positional arguments ("FILE...", "NAME",
	// "[ARM...]"). A command with Args takes positional arguments, and its
	// flags may follow them (mptcp-lab run FILE --out DIR). The rest of the
	// synopsis is made from the flag set.
	Args string
	// Required are the flags the synopsis shows as required, in its order;
	// "a|b" is one of the two (--bytes or --time). The action checks them
	// (it knows the message that helps).
	Required []string
	// Help is further text for -h and the man page (optional).
	Help string
	// Flags declares the command's flags on fs and returns what runs. It
	// must do nothing else: the synopsis, the man page and the completions
	// call it to learn the flags. Nil for a command with subcommands.
	Flags func(fs *flag.FlagSet) Action
	// Positional: the command takes positional arguments although Args
	// shows none, as a second form of a flag that Help describes
	// (`load olia` for `load --algo olia`).
	Positional bool
	// Values are what a positional argument usually is, for the shell
	// completions (without them, file names are completed).
	Values []string
	// Sub are subcommands (mptcp-cc policy attach).
	Sub []Command
	// Hidden commands run but are listed nowhere (internal helpers).
	Hidden bool
}

func (c Command) takesArgs() bool { return c.Positional || c.Args != "" }

// App is a binary made of subcommands, or of one Single command.
type App struct {
	Name     string
	Summary  string // one line: what the program is, for the man page
	Commands []Command
	// Single is the command of a binary without subcommands (mptcp-demo):
	// its flags follow the program's name. Commands is then empty.
	Single *Command
	// Footer is printed after the command list in the usage text.
	Footer string
}

// ErrInterrupted makes Run exit with 130, as shells do after Ctrl-C.
var ErrInterrupted = errors.New("interrupted")

// ErrReported makes Run exit with 1 without a line of its own: the command
// has already said on its output why it failed (`mptcp-cc doctor`'s
// findings).
var ErrReported = errors.New("failed, as reported above")

// errUsage marks errors that exit with 2.
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

// Usagef is the error an action returns when it was called wrongly (a
// required flag is missing, a value is not one the flag lists): Run exits
// with 2, as for an unknown flag, so scripts can tell a wrong command line
// from a failed command.
func Usagef(format string, args ...any) error { return errUsage{fmt.Sprintf(format, args...)} }

// Usage writes the command list (for a Single app, its help).
func (a *App) Usage(w io.Writer) {
	if a.Single != nil {
		a.leafHelp(w, *a.Single, "")
		return
	}
	fmt.Fprintf(w, "usage: %s COMMAND [flags]\n\ncommands:\n", a.Name)
	writeList(w, a.Commands)
	fmt.Fprintf(w, "\n`%s help COMMAND` or `%s COMMAND -h` shows a command's usage and flags.", a.Name, a.Name)
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

// root is the App as a command: its subcommands, or its Single command.
func (a *App) root() Command {
	if a.Single != nil {
		return *a.Single
	}
	return Command{Name: a.Name, Sub: a.Commands}
}

// line is the command line of path ("mptcp-cc policy attach").
func (a *App) line(path string) string { return strings.TrimSpace(a.Name + " " + path) }

// Run dispatches args (without the program name) and returns the exit code.
func (a *App) Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 && a.Single == nil {
		a.Usage(stderr)
		return 2
	}
	path, err := a.run(a.root(), "", args, stdout)
	var ue errUsage
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrReported):
		return 1
	case errors.Is(err, ErrInterrupted):
		fmt.Fprintf(stderr, "%s: %v\n", a.line(path), err)
		return 130
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\n", a.line(path), err)
		fmt.Fprintf(stderr, "`%s -h` shows the usage\n", a.line(path))
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", a.line(path), err)
		return 1
	}
}

// run runs c (named path, e.g. "policy attach"; "" for the App) and returns
// the path of the command that ran, for error messages.
func (a *App) run(c Command, path string, args []string, out io.Writer) (string, error) {
	if c.Flags == nil {
		if len(args) == 0 {
			return path, errUsage{fmt.Sprintf("say what to do: %s", names(c.Sub))}
		}
		switch args[0] {
		case "-h", "--help":
			a.help(out, c, path)
			return path, flag.ErrHelp
		case "help":
			return a.helpOf(c, path, args[1:], out)
		}
		sub, ok := find(c.Sub, args[0])
		if !ok {
			what := "subcommand"
			if path == "" {
				what = "command"
			}
			return path, errUsage{fmt.Sprintf("unknown %s %q: %s", what, args[0], names(c.Sub))}
		}
		return a.run(sub, strings.TrimSpace(path+" "+sub.Name), args[1:], out)
	}
	fs := flag.NewFlagSet(a.line(path), flag.ContinueOnError)
	// Errors are returned, not printed (Run prints them once), and -h is
	// answered here, on stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	action := c.Flags(fs)
	var pos []string
	var err error
	if c.takesArgs() {
		pos, err = ParseInterspersed(fs, args)
	} else {
		err = Parse(fs, args)
	}
	if errors.Is(err, flag.ErrHelp) {
		a.leafHelp(out, c, path)
		return path, err
	}
	if err != nil {
		return path, errUsage{flagError(fs, err)}
	}
	return path, action(pos, out)
}

// helpOf answers `help [CMD [SUB]]` asked of group c.
func (a *App) helpOf(c Command, path string, args []string, out io.Writer) (string, error) {
	for _, name := range args {
		if c.Flags != nil {
			return path, errUsage{fmt.Sprintf("%s has no subcommand %q", a.line(path), name)}
		}
		sub, ok := find(c.Sub, name)
		if !ok {
			return path, errUsage{fmt.Sprintf("no command %q: %s", name, names(c.Sub))}
		}
		c, path = sub, strings.TrimSpace(path+" "+name)
	}
	a.help(out, c, path)
	return path, flag.ErrHelp
}

// help writes the help of c: the App's usage, a group's or a command's.
func (a *App) help(w io.Writer, c Command, path string) {
	switch {
	case path == "" && a.Single == nil:
		a.Usage(w)
	case c.Flags == nil:
		a.groupHelp(w, c, path)
	default:
		a.leafHelp(w, c, path)
	}
}

func (a *App) groupHelp(w io.Writer, c Command, path string) {
	fmt.Fprintf(w, "usage: %s SUBCOMMAND [flags]\n\nsubcommands:\n", a.line(path))
	for _, s := range visible(c.Sub) {
		writeTerms(w, "  "+s.Name, "      ", synopsis(s))
		writeWrapped(w, "        ", s.Summary)
	}
	if c.Help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.Trim(c.Help, "\n"))
	}
	fmt.Fprintf(w, "\n`%s help SUBCOMMAND` or `%s SUBCOMMAND -h` shows a subcommand's flags.\n", a.line(path), a.line(path))
}

// leafHelp is -h of a command: the synopsis, the help text and the flags.
func (a *App) leafHelp(w io.Writer, c Command, path string) {
	writeUsageLine(w, a.line(path), synopsis(c))
	if c.Help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.Trim(c.Help, "\n"))
	}
	writeFlags(w, flagsOf(c))
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
