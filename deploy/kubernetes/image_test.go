// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// No container engine runs where these tests run, so the Dockerfile is
// checked by reading it: its stages, what reaches the final image, and that
// the image runs what the DaemonSet expects. The one thing taken on trust
// is that `docker build` does what the file says.

// dockerInstr is one Dockerfile instruction, continuation lines joined.
type dockerInstr struct {
	line int
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

type dockerStage struct {
	from, name string
	instrs     []dockerInstr
}

// parseDockerfile splits a Dockerfile into stages. It knows what this
// project's Dockerfile uses: comments, backslash continuations, and
// instructions one per logical line; no parser directives or heredocs.
func parseDockerfile(data []byte) ([]dockerStage, error) {
	var stages []dockerStage
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" && cur.Len() == 0 {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		body, more := strings.CutSuffix(line, `\`)
		cur.WriteString(body + " ")
		if more {
			continue
		}
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		cur.Reset()
		in := dockerInstr{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := dockerStage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				return nil, fmt.Errorf("line %d: FROM %s: want IMAGE [AS NAME]", start, in.args)
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd == "ARG" {
				continue
			}
			return nil, fmt.Errorf("line %d: %s before the first FROM", start, in.cmd)
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: the file ends inside a continued line", start)
	}
	return stages, sc.Err()
}

// execForm decodes a JSON-array ENTRYPOINT or CMD. The shell form would
// need /bin/sh, which a scratch image does not have.
func execForm(in dockerInstr) ([]string, error) {
	var argv []string
	if err := json.Unmarshal([]byte(in.args), &argv); err != nil || len(argv) == 0 {
		return nil, fmt.Errorf("line %d: %s %s: use the exec form [\"...\"]; the shell form needs a shell the image does not have", in.line, in.cmd, in.args)
	}
	return argv, nil
}

// copyArgs splits COPY's flags (--from=...) from its sources and target.
func copyArgs(in dockerInstr) (flags map[string]string, srcs []string, dst string) {
	flags = map[string]string{}
	for _, f := range strings.Fields(in.args) {
		if k, v, ok := strings.Cut(strings.TrimPrefix(f, "--"), "="); ok && strings.HasPrefix(f, "--") {
			flags[k] = v
			continue
		}
		srcs = append(srcs, f)
	}
	if len(srcs) > 0 {
		dst = srcs[len(srcs)-1]
		srcs = srcs[:len(srcs)-1]
	}
	return flags, srcs, dst
}

func readDockerfile(t *testing.T) (build, runtime dockerStage) {
	t.Helper()
	data := repoFile(t, "Dockerfile")
	stages, err := parseDockerfile(data)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if len(stages) != 2 {
		t.Fatalf("Dockerfile: %d stages; want two, a build stage and the runtime image", len(stages))
	}
	return stages[0], stages[1]
}

// repoFile reads a file at the repository's root.
func repoFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// goVersion is go.mod's go directive, major.minor.
func goVersion(t *testing.T) string {
	t.Helper()
	data := repoFile(t, "go.mod")
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

// debPackages is the Makefile's DEB_PACKAGES, what `make deps` installs.
func debPackages(t *testing.T) []string {
	t.Helper()
	data := repoFile(t, "Makefile")
	m := regexp.MustCompile(`(?m)^DEB_PACKAGES\s*:=((?:.*\\\n)*.*)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("the Makefile has no DEB_PACKAGES")
	}
	return strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " "))
}

// aptInstalled returns the packages a RUN line installs with apt-get.
func aptInstalled(run string) []string {
	var pkgs []string
	for _, cmd := range strings.Split(run, "&&") {
		f := strings.Fields(cmd)
		i := slices.Index(f, "install")
		if i < 0 || !slices.Contains(f[:i], "apt-get") {
			continue
		}
		for _, w := range f[i+1:] {
			if !strings.HasPrefix(w, "-") {
				pkgs = append(pkgs, w)
			}
		}
	}
	return pkgs
}

func TestDockerfileBuildStage(t *testing.T) {
	build, _ := readDockerfile(t)
	if want := "golang:" + goVersion(t) + "-"; !strings.HasPrefix(build.from, want) {
		t.Errorf("the build stage is FROM %s; go.mod wants Go %s (an image %s...)", build.from, goVersion(t), want)
	}
	if build.name == "" {
		t.Error("the build stage has no name (FROM ... AS build) for the runtime stage's COPY --from")
	}
	deps := append(debPackages(t), "make")
	var built bool
	for _, in := range build.instrs {
		if in.cmd != "RUN" {
			continue
		}
		for _, p := range aptInstalled(in.args) {
			if !slices.Contains(deps, p) {
				t.Errorf("line %d installs %s, which the Makefile's DEB_PACKAGES does not: a build that works in the image would fail with `make deps`, or the reverse", in.line, p)
			}
		}
		if strings.Contains(in.args, "make build") {
			built = true
			if strings.Contains(in.args, "CGO_ENABLED=1") {
				t.Errorf("line %d: `make build` with cgo links against libc, which the runtime image does not have", in.line)
			}
		}
	}
	if !built {
		t.Error("the build stage does not run `make build`, the project's one way to build (it generates the BPF objects first)")
	}
	if recipe := makeRecipe(t, "build"); !strings.Contains(recipe, "CGO_ENABLED=0") {
		t.Errorf("the Makefile's build recipe does not set CGO_ENABLED=0, so the image's binary would need libc:\n%s", recipe)
	}
}

// makeRecipe returns the recipe lines of a Makefile target.
func makeRecipe(t *testing.T, target string) string {
	t.Helper()
	data := repoFile(t, "Makefile")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:.*\n((?:\t.*\n)*)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("the Makefile has no %s target", target)
	}
	return string(m[1])
}

// workdir is the build stage's last WORKDIR, where `make build` runs.
func workdir(st dockerStage) string {
	dir := "/"
	for _, in := range st.instrs {
		if in.cmd == "WORKDIR" {
			dir = path.Join(dir, in.args)
		}
	}
	return dir
}

// The runtime image holds the static binary and nothing else, and runs it
// the way the DaemonSet expects.
func TestDockerfileRuntimeStage(t *testing.T) {
	build, rt := readDockerfile(t)
	b := load(t)
	c := container(t, b)
	if rt.from != "scratch" {
		t.Errorf("the runtime stage is FROM %s; want scratch: the binary is static and needs no file of a base image", rt.from)
	}
	binary := path.Join(workdir(build), "bin/mptcp-cc")
	var dst string
	var entrypoint, cmd []string
	for _, in := range rt.instrs {
		switch in.cmd {
		case "COPY":
			flags, srcs, to := copyArgs(in)
			if flags["from"] != build.name {
				t.Errorf("line %d: COPY from %q; only the build stage's output belongs in the image", in.line, flags["from"])
			}
			for _, s := range srcs {
				switch s {
				case binary:
					dst = to
				default:
					t.Errorf("line %d copies %s into the image; it should hold %s alone (the agent opens no TLS connection, so not even CA certificates)", in.line, s, binary)
				}
			}
		case "ENTRYPOINT", "CMD":
			argv, err := execForm(in)
			if err != nil {
				t.Error(err)
			} else if in.cmd == "ENTRYPOINT" {
				entrypoint = argv
			} else {
				cmd = argv
			}
		case "USER":
			want := fmt.Sprintf("%d:%d", *c.SecurityContext.RunAsUser, *c.SecurityContext.RunAsGroup)
			if in.args != want {
				t.Errorf("line %d: USER %s; the DaemonSet runs as %s (numeric: a scratch image has no /etc/passwd)", in.line, in.args, want)
			}
		case "EXPOSE":
			if mp := metricsPort(t, b); in.args != strconv.Itoa(int(mp.ContainerPort)) {
				t.Errorf("line %d: EXPOSE %s; the metrics port is %d", in.line, in.args, mp.ContainerPort)
			}
		case "LABEL":
		default:
			t.Errorf("line %d: %s in the runtime stage; it holds the binary and says how to run it, nothing more", in.line, in.cmd)
		}
	}
	if dst == "" {
		t.Fatalf("the runtime stage does not copy %s", binary)
	}
	if !slices.Equal(entrypoint, []string{dst}) {
		t.Errorf("ENTRYPOINT %q; want [%q], the binary (the DaemonSet passes only args)", entrypoint, dst)
	}
	// Run by hand (docker run IMAGE), the image serves the config at the
	// path the DaemonSet mounts.
	want, _ := flagValue(c.Args, "config")
	if got, _ := flagValue(cmd, "config"); len(cmd) == 0 || cmd[0] != "serve" || got != want {
		t.Errorf("CMD %q; want serve --config=%s, as the DaemonSet's args", cmd, want)
	}
}

// .dockerignore keeps local outputs out of the build context but nothing
// the build needs.
func TestDockerignore(t *testing.T) {
	data := repoFile(t, ".dockerignore")
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	ignored := func(p string) bool {
		for dir := p; dir != "."; dir = path.Dir(dir) {
			for _, pat := range patterns {
				if ok, _ := path.Match(pat, dir); ok {
					return true
				}
			}
		}
		return false
	}
	for _, need := range []string{"go.mod", "go.sum", "Makefile", "cmd/mptcp-cc/main.go", "pkg/cc/gen.go", "bpf/cc", "bpf/include", "internal/cli"} {
		if ignored(need) {
			t.Errorf(".dockerignore leaves %s out of the build context; `make build` needs it", need)
		}
	}
	for _, junk := range []string{".git", "bin/mptcp-cc", "build/man", ".generated", "pkg/cc/lia_bpfel.o", "bpf/include/vmlinux.h"} {
		if !ignored(junk) {
			t.Errorf(".dockerignore does not leave out %s: a local build's output would reach the image's build instead of being made from the sources", junk)
		}
	}
}

// staticELF says why an ELF file is not a static executable, or nil.
func staticELF(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			return fmt.Errorf("%s has an ELF interpreter (PT_INTERP): it is dynamically linked", file)
		case elf.PT_DYNAMIC:
			return fmt.Errorf("%s has a dynamic section (PT_DYNAMIC)", file)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("%s needs shared libraries %v", file, libs)
	}
	return nil
}

// `CGO_ENABLED=0 go build ./cmd/mptcp-cc` (TestMain sets it), as the image's
// build does, gives a binary that runs on scratch.
func TestBinaryIsStatic(t *testing.T) {
	if err := staticELF(mptcpCC(t)); err != nil {
		t.Error(err)
	}
	// The check itself must see a dynamic executable for what it is.
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if staticELF(sh) == nil {
		t.Errorf("staticELF calls %s static; it is not on Debian", sh)
	}
}

// deploy/container/Containerfile (`make image`: buildah, from the binary
// the host built) makes the same image as the Dockerfile's runtime stage:
// the same instructions, the binary copied from the build context instead
// of the build stage.
func TestContainerfileIsTheRuntimeStage(t *testing.T) {
	_, runtime := readDockerfile(t)
	stages, err := parseDockerfile(repoFile(t, "deploy/container/Containerfile"))
	if err != nil || len(stages) != 1 {
		t.Fatalf("deploy/container/Containerfile: %d stages (%v); want one", len(stages), err)
	}
	cf := stages[0]
	if cf.from != runtime.from || len(cf.instrs) != len(runtime.instrs) {
		t.Fatalf("Containerfile: FROM %s with %d instructions; the Dockerfile's runtime stage: FROM %s with %d", cf.from, len(cf.instrs), runtime.from, len(runtime.instrs))
	}
	for i, in := range cf.instrs {
		want := runtime.instrs[i]
		if in.cmd == "COPY" && want.cmd == "COPY" {
			_, srcs, dst := copyArgs(in)
			_, wsrcs, wdst := copyArgs(want)
			if dst != wdst || len(srcs) != 1 || len(wsrcs) != 1 || filepath.Base(srcs[0]) != filepath.Base(wsrcs[0]) {
				t.Errorf("Containerfile line %d: COPY %s; the Dockerfile's line %d: COPY %s", in.line, in.args, want.line, want.args)
			}
			continue
		}
		if in.cmd != want.cmd || in.args != want.args {
			t.Errorf("Containerfile line %d: %s %s; the Dockerfile's line %d: %s %s", in.line, in.cmd, in.args, want.line, want.cmd, want.args)
		}
	}
}
