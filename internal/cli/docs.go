// SPDX-License-Identifier: Apache-2.0

package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// WithDocs adds the commands every binary offers about itself:
// `completion bash|zsh` (a completion script on stdout) and a hidden
// `man DIR` (roff man pages; the Makefile's gen-docs and the Debian
// package use it).
func (a *App) WithDocs() *App {
	a.Commands = append(a.Commands,
		Command{
			Name: "completion", Summary: "print a shell completion script (bash or zsh)",
			Args: "bash|zsh", Values: []string{"bash", "zsh"},
			Help: "  bash: source <(" + a.Name + " completion bash)\n  zsh:  " + a.Name + " completion zsh > \"${fpath[1]}/_" + a.Name + "\"",
			Flags: func(*flag.FlagSet) Action {
				return func(args []string, out io.Writer) error {
					if len(args) != 1 {
						return errUsage{"say which shell: bash or zsh"}
					}
					return a.WriteCompletion(out, args[0])
				}
			},
		},
		Command{
			Name: "man", Summary: "write the man page", Args: "DIR", Hidden: true,
			Flags: func(*flag.FlagSet) Action {
				return func(args []string, _ io.Writer) error {
					if len(args) != 1 {
						return errUsage{"say where: DIR"}
					}
					f, err := os.Create(filepath.Join(args[0], a.Name+".1"))
					if err != nil {
						return err
					}
					if err := a.WriteMan(f); err != nil {
						f.Close()
						return err
					}
					return f.Close()
				}
			},
		})
	return a
}

// leaf is a runnable command with its full path ("policy attach").
type leaf struct {
	path string
	cmd  Command
}

// leaves lists the App's runnable commands (a Single app's one, path "").
func (a *App) leaves() []leaf {
	if a.Single != nil {
		return []leaf{{"", *a.Single}}
	}
	return leaves(a.Commands, "")
}

func leaves(cmds []Command, prefix string) []leaf {
	var out []leaf
	for _, c := range visible(cmds) {
		path := strings.TrimSpace(prefix + " " + c.Name)
		if len(c.Sub) > 0 {
			out = append(out, leaves(c.Sub, path)...)
			continue
		}
		out = append(out, leaf{path, c})
	}
	return out
}

// WriteMan writes a section-1 man page in roff (man macros).
func (a *App) WriteMan(w io.Writer) error {
	p := &roff{w: w}
	p.line(`.TH %s 1 "" "%s" "User Commands"`, esc(strings.ToUpper(a.Name)), esc(a.Name))
	p.line(".SH NAME")
	p.line(`%s \- %s`, esc(a.Name), esc(a.Summary))
	p.line(".SH SYNOPSIS")
	p.line(`.B %s`, esc(a.Name))
	if a.Single != nil {
		p.line(`%s`, esc(synopsisLine(*a.Single)))
	} else {
		p.line(`.I COMMAND`)
		p.line(`[\fIflags\fR]`)
	}
	p.line(".SH COMMANDS")
	for _, l := range a.leaves() {
		p.line(".TP")
		p.line(`.B %s`, esc(a.line(l.path)))
		if syn := synopsisLine(l.cmd); syn != "" {
			p.line(`.I %s`, quote(syn))
			p.line(".br")
		}
		p.line("%s", esc(l.cmd.Summary))
		if l.cmd.Help != "" {
			p.line(".IP")
			p.prose(l.cmd.Help)
		}
		for _, f := range flagsOf(l.cmd) {
			p.line(".RS")
			p.line(".TP")
			arg := ""
			if f.value != "" {
				arg = ` \fI` + esc(f.value) + `\fR`
			}
			p.line(`.B \-\-%s%s`, esc(f.name), arg)
			p.text(f.text())
			p.line(".RE")
		}
	}
	p.line(".SH EXIT STATUS")
	for _, e := range [][2]string{
		{"0", "success, or help was asked for"},
		{"1", "the command failed, or checked a value and refused it (out of range, not in the form wanted, not registered, not found); the message names the problem and the fix"},
		{"2", "usage error: an unknown or incomplete command, an unknown flag, a value of the wrong type or not among the choices the flag lists, a required flag missing, an unexpected argument"},
		{"130", "interrupted"},
	} {
		p.line(".TP")
		p.line(".B %s", e[0])
		p.text(e[1])
	}
	if a.Footer != "" {
		p.line(".SH SEE ALSO")
		p.text(a.Footer)
	}
	return p.err
}

type roff struct {
	w   io.Writer
	err error
}

func (r *roff) line(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format+"\n", args...)
	}
}

// text writes free text; a line that starts with a dot or quote would be a
// roff request, so it is protected.
func (r *roff) text(s string) {
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		l = esc(l)
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		r.line("%s", l)
		r.line(".br")
	}
}

// prose writes a help text, written for -h at 80 columns, to be filled
// to the man page's width: a blank line is a paragraph break, and lines
// that start with spaces (a table, a command) are kept as they are.
func (r *roff) prose(s string) {
	verbatim := false
	for _, l := range strings.Split(strings.Trim(s, "\n"), "\n") {
		indented := strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")
		if verbatim && !indented {
			r.line(".fi")
			verbatim = false
		}
		if strings.TrimSpace(l) == "" {
			r.line(".sp")
			continue
		}
		if indented && !verbatim {
			r.line(".nf")
			verbatim = true
		}
		l = esc(l)
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		r.line("%s", l)
	}
	if verbatim {
		r.line(".fi")
	}
}

func esc(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

func quote(s string) string { return `"` + strings.ReplaceAll(esc(s), `"`, `\(dq`) + `"` }

// WriteCompletion writes a completion script for shell (bash or zsh): the
// commands, subcommands and each command's flags.
func (a *App) WriteCompletion(w io.Writer, shell string) error {
	switch shell {
	case "bash":
		return a.bashCompletion(w)
	case "zsh":
		return a.zshCompletion(w)
	}
	return errUsage{fmt.Sprintf("unknown shell %q: bash or zsh", shell)}
}

// words maps a command path ("", "policy", "policy attach") to what may
// follow it: subcommand names, or the command's flags.
func (a *App) words() map[string][]string {
	m := map[string][]string{}
	leafWords := func(c Command) (w []string) {
		for _, f := range flagsOf(c) {
			w = append(w, "--"+f.name)
		}
		return append(w, c.Values...)
	}
	if a.Single != nil {
		m[""] = leafWords(*a.Single)
		return m
	}
	var walk func(cmds []Command, prefix string)
	walk = func(cmds []Command, prefix string) {
		for _, c := range visible(cmds) {
			m[prefix] = append(m[prefix], c.Name)
			path := strings.TrimSpace(prefix + " " + c.Name)
			if len(c.Sub) > 0 {
				walk(c.Sub, path)
				continue
			}
			m[path] = leafWords(c)
		}
	}
	walk(a.Commands, "")
	return m
}

func (a *App) bashCompletion(w io.Writer) error {
	fn := "_" + strings.ReplaceAll(a.Name, "-", "_")
	m := a.words()
	keys := sortedKeys(m)
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s (generated by `%s completion bash`)\n", a.Name, a.Name)
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString("\tlocal cur=${COMP_WORDS[COMP_CWORD]} path= i w\n")
	b.WriteString("\t# the command path: the words before the cursor that are not flags\n")
	b.WriteString("\tfor ((i = 1; i < COMP_CWORD; i++)); do\n")
	b.WriteString("\t\tw=${COMP_WORDS[i]}\n")
	b.WriteString("\t\tcase \"$w\" in -*) continue ;; esac\n")
	b.WriteString("\t\tcase \"${path:+$path }$w\" in\n")
	for _, k := range keys {
		if k != "" {
			fmt.Fprintf(&b, "\t\t%q) path=\"${path:+$path }$w\" ;;\n", k)
		}
	}
	b.WriteString("\t\tesac\n\tdone\n")
	b.WriteString("\tlocal words\n\tcase \"$path\" in\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "\t%q) words=%q ;;\n", k, strings.Join(m[k], " "))
	}
	b.WriteString("\tesac\n")
	b.WriteString("\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n")
	b.WriteString("\t# flags with a value, or positional arguments: complete file names\n")
	b.WriteString("\t[ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- \"$cur\"))\n")
	b.WriteString("}\n")
	fmt.Fprintf(&b, "complete -o filenames -F %s %s\n", fn, a.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

func (a *App) zshCompletion(w io.Writer) error {
	fn := "_" + strings.ReplaceAll(a.Name, "-", "_")
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s (generated by `%s completion zsh`)\n\n", a.Name, a.Name, a.Name)
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString("\tlocal -a words_\n\tlocal path_=\"\" w\n")
	b.WriteString("\tfor w in ${words[2,CURRENT-1]}; do\n\t\t[[ $w == -* ]] && continue\n\t\tcase \"${path_:+$path_ }$w\" in\n")
	m := a.words()
	for _, k := range sortedKeys(m) {
		if k != "" {
			fmt.Fprintf(&b, "\t\t%q) path_=\"${path_:+$path_ }$w\" ;;\n", k)
		}
	}
	b.WriteString("\t\tesac\n\tdone\n")
	b.WriteString("\t# from here on, the command (its last word) is words[1], as _arguments expects\n")
	b.WriteString("\tlocal n=${#${(z)path_}}\n\tif (( n > 0 )); then shift $n words; (( CURRENT -= n )); fi\n")
	b.WriteString("\tcase \"$path_\" in\n")
	var walk func(cmds []Command, prefix string)
	walk = func(cmds []Command, prefix string) {
		var items []string
		for _, c := range visible(cmds) {
			items = append(items, zq(c.Name+":"+c.Summary))
		}
		fmt.Fprintf(&b, "\t%q)\n\t\tlocal -a cmds=(%s)\n\t\t_describe command cmds ;;\n", prefix, strings.Join(items, " "))
		for _, c := range visible(cmds) {
			path := strings.TrimSpace(prefix + " " + c.Name)
			if len(c.Sub) > 0 {
				walk(c.Sub, path)
				continue
			}
			fmt.Fprintf(&b, "\t%q)\n\t\t_arguments %s ;;\n", path, zshSpecs(c))
		}
	}
	if a.Single != nil {
		fmt.Fprintf(&b, "\t\"\")\n\t\t_arguments %s ;;\n", zshSpecs(*a.Single))
	} else {
		walk(a.Commands, "")
	}
	b.WriteString("\tesac\n}\n\n")
	fmt.Fprintf(&b, "%s \"$@\"\n", fn)
	_, err := io.WriteString(w, b.String())
	return err
}

// zshSpecs are the _arguments specs of a command: its flags and arguments.
func zshSpecs(c Command) string {
	var specs []string
	for _, f := range flagsOf(c) {
		spec := "--" + f.name + "[" + strings.NewReplacer("[", "(", "]", ")", ":", " ").Replace(f.help) + "]"
		if f.value != "" {
			spec += ":" + f.name + ":_files"
		}
		specs = append(specs, zq(spec))
	}
	switch {
	case c.takesArgs() && len(c.Values) > 0:
		specs = append(specs, zq("1:argument:("+strings.Join(c.Values, " ")+")"))
	case c.takesArgs():
		specs = append(specs, zq("*:argument:_files"))
	}
	return strings.Join(specs, " ")
}

// zq quotes for zsh single quotes.
func zq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func sortedKeys(m map[string][]string) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}
