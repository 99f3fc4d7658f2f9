// SPDX-License-Identifier: Apache-2.0

package matrix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mptcp-cc/mptcp-cc/internal/vmtest"
)

// The arm64 row. virtme-ng shares the host's root filesystem with the
// guest, which an arm64 guest cannot run, so the VM boots Debian's arm64
// kernel under qemu-system-aarch64 (TCG) from an initramfs built here:
// busybox-static, iproute2 and ethtool with their libraries (lab/topo's
// two paths run ip, tc, ethtool, nstat, sysctl), all arm64 packages from
// Debian's archive (scripts/debian-rootfs.sh), the modules the check needs
// from the kernel's package, and this package's test binary and mptcp-cc
// cross-built for arm64. /init runs TestGuestMatrix as the other rows do
// and prints its result between markers on the console.

// arm64Packages are what the initramfs holds, besides the kernel's
// modules: every library iproute2's ip, tc, nstat and ethtool link, named
// (the script resolves no dependencies).
var arm64Packages = []string{"busybox-static", "iproute2", "ethtool", "libc6", "libbpf1", "libbsd0", "libcap2",
	"libelf1", "libmnl0", "libmd0", "libxtables12", "zlib1g", "libselinux1", "libpcre2-8-0"}

// arm64Modules are the modules the check loads (Debian builds them as
// modules): veth and tbf for lab/topo's paths, tun for linkem, the diag
// modules for sock_diag's MPTCP view.
var arm64Modules = []string{"veth", "tun", "sch_tbf", "inet_diag", "tcp_diag", "mptcp_diag"}

const resultBegin, resultEnd = "@@matrix-result-begin", "@@matrix-result-end"

func repoScript(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", name)
}

func runArm64(t *testing.T, k Kernel, mode, file string) {
	if _, err := exec.LookPath("qemu-system-aarch64"); err != nil {
		t.Fatalf("qemu-system-aarch64 is not installed: `make deps` installs it (Debian package qemu-system-arm; cpio too)")
	}
	cache, err := vmtest.KernelCache()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(repoScript("debian-kernel.sh"), k.Debian, cache)
	cmd.Env = append(os.Environ(), "DEBIAN_ARCH=arm64")
	cmd.Stderr = os.Stderr
	img, err := cmd.Output()
	if err != nil {
		t.Fatalf("fetching Debian's arm64 kernel %s: %v", k.Debian, err)
	}
	image := strings.TrimSpace(string(img))
	kdir := filepath.Join(cache, k.Debian+"-arm64")
	release := k.Debian + "-arm64"

	root := filepath.Join(t.TempDir(), "root")
	base := filepath.Join(cache, "rootfs-arm64")
	if _, err := os.Stat(filepath.Join(base, ".complete")); err != nil {
		os.RemoveAll(base)
		run(t, nil, repoScript("debian-rootfs.sh"), append([]string{"arm64", cache, base}, arm64Packages...)...)
		if err := os.WriteFile(filepath.Join(base, ".complete"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, nil, "cp", "-a", base, root)
	// The packages are merged-/usr (trixie on): /bin, /sbin and /lib
	// are links into /usr, as on an installed system.
	for _, d := range []string{"bin", "sbin", "lib"} {
		if err := os.Symlink("usr/"+d, filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"proc", "sys", "dev", "tmp", "run", "mnt", "var", "modules"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(root, "var", "run"))
	if err := os.Symlink("/run", filepath.Join(root, "var", "run")); err != nil {
		t.Fatal(err)
	}
	// The modules and those they depend on, in load order, uncompressed
	// (busybox's insmod may lack xz).
	var order []string
	for _, m := range arm64Modules {
		out := run(t, nil, "modprobe", "-d", kdir, "-S", release, "--show-depends", m)
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) < 2 || f[0] != "insmod" {
				continue
			}
			name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(f[1]), ".xz"), ".ko") + ".ko"
			if slices.Contains(order, name) {
				continue
			}
			order = append(order, name)
			src := f[1]
			if strings.HasSuffix(src, ".xz") {
				run(t, nil, "sh", "-c", fmt.Sprintf("xz -dc %s > %s", src, filepath.Join(root, "modules", name)))
			} else {
				run(t, nil, "cp", src, filepath.Join(root, "modules", name))
			}
		}
	}
	// The binaries, cross-built.
	arm := append(os.Environ(), "GOARCH=arm64", "CGO_ENABLED=0")
	run(t, arm, "go", "build", "-o", filepath.Join(root, "bin", "mptcp-cc"), "../../cmd/mptcp-cc")
	run(t, arm, "go", "test", "-c", "-o", filepath.Join(root, "matrix.test"), ".")

	env := fmt.Sprintf("%s=/tmp/result.json %s=/bin/mptcp-cc %s=%s %s=%s", guestOutEnv, guestBinEnv, guestModeEnv, mode, guestNameEnv, k.Name)
	init := "#!/bin/busybox sh\n" +
		// busybox's applets last in PATH: its own ip and tc lack what
		// lab/topo asks of Debian's.
		"/bin/busybox mount -t proc proc /proc; /bin/busybox mkdir /bb && /bin/busybox --install -s /bb\nexport PATH=/usr/sbin:/usr/bin:/bb\n" +
		"mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp; mount -t tmpfs run /run\n" +
		"mount -t bpf bpf /sys/fs/bpf; mount -t cgroup2 cgroup2 /sys/fs/cgroup\n" +
		"for m in " + strings.Join(order, " ") + "; do insmod /modules/$m || echo \"insmod $m failed\"; done\n" +
		"ip link set lo up\nuname -r\n" +
		"cd / && env " + env + " /matrix.test -test.run '^TestGuestMatrix$' -test.count=1 -test.v -test.timeout 10m\n" +
		"echo " + resultBegin + "; cat /tmp/result.json; echo " + resultEnd + "\n" +
		"poweroff -f\n"
	if err := os.WriteFile(filepath.Join(root, "init"), []byte(init), 0o755); err != nil {
		t.Fatal(err)
	}
	initrd := filepath.Join(t.TempDir(), "initrd.gz")
	run(t, nil, "sh", "-c", fmt.Sprintf("cd %s && find . | cpio -o -H newc --quiet | gzip -1 > %s", root, initrd))

	unlock := lock(t)
	start := time.Now()
	q := exec.Command("timeout", "-k", "10", "900", "qemu-system-aarch64", "-M", "virt", "-cpu", "cortex-a72", "-smp", "2", "-m", "2G",
		"-nographic", "-no-reboot", "-kernel", image, "-initrd", initrd, "-append", "console=ttyAMA0 panic=-1 quiet")
	console, err := q.CombinedOutput()
	took := time.Since(start)
	unlock()
	t.Logf("qemu-system-aarch64 ran %v (%v); console:\n%s", took.Round(time.Second), err, console)
	i, j := bytes.Index(console, []byte(resultBegin+"\r\n")), bytes.Index(console, []byte(resultEnd))
	if i < 0 {
		i = bytes.Index(console, []byte(resultBegin+"\n"))
	}
	r := Result{Kernel: k.Name, Mode: mode, Arch: "arm64", Date: time.Now().UTC().Format("2006-01-02")}
	if i < 0 || j < i {
		r.Add("run", Fail, "no result on the arm64 VM's console")
	} else if err := json.Unmarshal(bytes.TrimSpace(console[i+len(resultBegin):j]), &r); err != nil {
		r.Add("run", Fail, "the result on the console: "+err.Error())
	}
	r.Boot = took.Seconds() - r.Seconds
	if err := Write(file, r); err != nil {
		t.Fatal(err)
	}
	if !r.Passed() {
		t.Errorf("the arm64 check failed: %+v", r.Steps)
	}
}

// run runs a command on the host, failing the test with its output.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
