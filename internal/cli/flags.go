// SPDX-License-Identifier: Apache-2.0

package cli

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// flagInfo is one flag as the help, the man page and the completions show it.
type flagInfo struct {
	name  string
	value string // the value's name in the synopsis ("DIR"); "" for a switch
	help  string // the usage text, the value name's back-quotes removed
	def   string // the default, "" when it is the zero value
	// defTrue: a switch that is on unless --name=false is given.
	defTrue    bool
	repeatable bool
}

// valueNameRE is a value name in a flag's usage text: a back-quoted
// upper-case word (`DIR`, `ADDR:PORT`, `INDEX=VALUE`). Go's flag package
// takes any back-quoted text as the name, which turned "as `mptcp-cc
// subflows` shows it" into "-token mptcp-cc subflows": here other
// back-quoted text (a command to run) stays as written.
var valueNameRE = regexp.MustCompile("`([A-Z][A-Z0-9_:=.|-]*)`")

// flagsOf declares c's flags on a scratch flag set and lists them, sorted
// by name.
func flagsOf(c Command) []flagInfo {
	if c.Flags == nil {
		return nil
	}
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	c.Flags(fs)
	var out []flagInfo
	fs.VisitAll(func(f *flag.Flag) { out = append(out, describe(f)) })
	return out
}

func isSwitch(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func describe(f *flag.Flag) flagInfo {
	fi := flagInfo{name: f.Name, help: f.Usage, repeatable: strings.Contains(f.Usage, "(repeatable)")}
	if isSwitch(f) {
		fi.defTrue = f.DefValue == "true"
		return fi
	}
	fi.value = typeName(f)
	if m := valueNameRE.FindStringSubmatchIndex(f.Usage); m != nil {
		fi.value = f.Usage[m[2]:m[3]]
		fi.help = f.Usage[:m[0]] + fi.value + f.Usage[m[1]:]
	}
	switch f.DefValue {
	case "", "0", "0s", "[]":
	default:
		fi.def = f.DefValue
	}
	return fi
}

// typeName names a value whose usage text names none, from its type.
func typeName(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "VALUE"
	}
	switch g.Get().(type) {
	case time.Duration:
		return "DURATION"
	case int, int64, uint, uint64:
		return "N"
	case float64:
		return "NUMBER"
	}
	return "VALUE"
}

// wanted says what a value of f's type looks like, for the error about a
// value that does not parse (Go says only "parse error").
func wanted(f *flag.Flag) string {
	if isSwitch(f) {
		return "true or false"
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a " + typeName(f)
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 500ms, 10s or 1m30s"
	case int, int64:
		return "a whole number"
	case uint, uint64:
		return "a whole number, 0 or more"
	case float64:
		return "a number"
	}
	return "a " + typeName(f)
}

// term is how the synopsis shows the flag, without brackets.
func (f flagInfo) term() string {
	switch {
	case f.defTrue:
		return "--" + f.name + "=false"
	case f.value == "":
		return "--" + f.name
	}
	return "--" + f.name + " " + f.value
}

// header is the flag's line in the flag list.
func (f flagInfo) header() string {
	if f.value == "" {
		return "--" + f.name
	}
	return "--" + f.name + " " + f.value
}

// text is the flag's description with its default.
func (f flagInfo) text() string {
	switch {
	case f.defTrue:
		return f.help + " (default true)"
	case f.def != "":
		return f.help + " (default " + f.def + ")"
	}
	return f.help
}

// synopsis is what follows "PROG COMMAND" in the usage line, one term per
// element: the positional arguments, the required flags, then the others.
func synopsis(c Command) []string {
	flags := flagsOf(c)
	byName := map[string]flagInfo{}
	for _, f := range flags {
		byName[f.name] = f
	}
	var terms []string
	if c.Args != "" {
		terms = append(terms, c.Args)
	}
	required := map[string]bool{}
	for _, r := range c.Required {
		var alts []string
		for _, n := range strings.Split(r, "|") {
			required[n] = true
			f, ok := byName[n]
			if !ok {
				f = flagInfo{name: n} // the checker (clitest) reports it
			}
			alts = append(alts, f.header())
		}
		if len(alts) == 1 {
			terms = append(terms, alts[0])
		} else {
			terms = append(terms, "("+strings.Join(alts, " | ")+")")
		}
	}
	for _, f := range flags {
		if required[f.name] {
			continue
		}
		t := "[" + f.term() + "]"
		if f.repeatable {
			t += "..."
		}
		terms = append(terms, t)
	}
	return terms
}

// synopsisLine is c's synopsis as one line ("--algo NAME [--lisa] ...").
func synopsisLine(c Command) string { return strings.Join(synopsis(c), " ") }

const helpWidth = 80

// writeUsageLine writes "usage: PREFIX TERMS", wrapped between terms, the
// continuation lines indented under the first term.
func writeUsageLine(w io.Writer, prefix string, terms []string) {
	first := "usage: " + prefix
	writeTerms(w, first, strings.Repeat(" ", min(len(first)+1, 32)), terms)
}

// writeTerms writes first and the terms after it, wrapped between terms
// at helpWidth, continuation lines starting with indent.
func writeTerms(w io.Writer, first, indent string, terms []string) {
	line := first
	n := 0
	for _, t := range terms {
		if n > 0 && len(line)+1+len(t) > helpWidth {
			fmt.Fprintln(w, line)
			line, n = indent+t, 1
			continue
		}
		line += " " + t
		n++
	}
	fmt.Fprintln(w, line)
}

// writeWrapped writes text word-wrapped to helpWidth, every line indented.
func writeWrapped(w io.Writer, indent, text string) {
	line := indent
	for _, word := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(word) > helpWidth {
			fmt.Fprintln(w, line)
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}

// writeFlags writes the flag list of -h.
func writeFlags(w io.Writer, flags []flagInfo) {
	if len(flags) == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	for _, f := range flags {
		fmt.Fprintf(w, "  %s\n", f.header())
		writeWrapped(w, "        ", f.text())
	}
}

// goFlagRE finds the flag name in the errors of Go's flag package, which
// writes it with one dash ("flag provided but not defined: -nope").
var goFlagRE = regexp.MustCompile(`^(flag provided but not defined: |flag needs an argument: |invalid (?:boolean )?value "(?:[^"\\]|\\.)*" for (?:flag )?)-([^\s:]+)`)

// flagError is a parse error of fs as the user should read it: the flag
// with two dashes, as everywhere else, and what a value should look like
// when Go says only "parse error".
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	m := goFlagRE.FindStringSubmatchIndex(msg)
	if m == nil {
		return msg
	}
	name := msg[m[4]:m[5]]
	msg = msg[:m[4]] + "-" + msg[m[4]:]
	if f := fs.Lookup(name); f != nil && strings.HasSuffix(msg, ": parse error") {
		msg = strings.TrimSuffix(msg, "parse error") + "want " + wanted(f)
	}
	return msg
}
