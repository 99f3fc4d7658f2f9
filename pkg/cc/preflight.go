package cc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// Errors callers can test for (errors.Is).
var (
	ErrNotRoot        = errors.New("needs root (CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN): run it with sudo")
	ErrNoBTF          = errors.New("the kernel has no BTF (/sys/kernel/btf/vmlinux): build it with CONFIG_DEBUG_INFO_BTF=y (Linux 5.4 or newer)")
	ErrNoStructOps    = errors.New("the kernel cannot load BPF congestion controls (no bpf_struct_ops_tcp_congestion_ops in its BTF): it needs CONFIG_BPF_JIT and BPF struct_ops for TCP, Linux 6.4 or newer for struct_ops links")
	ErrAlreadyLoaded  = errors.New("already loaded")
	ErrNotLoaded      = errors.New("not loaded")
	ErrNameRegistered = errors.New("a congestion control of that name is already registered")
)

const availablePath = "/proc/sys/net/ipv4/tcp_available_congestion_control"

// DefaultPinRoot is where loaded algorithms are pinned unless told otherwise.
const DefaultPinRoot = "/sys/fs/bpf/mptcp-cc"

// checkPrivileges fails unless the process can load BPF and change the TCP
// stack. Capabilities rather than uid, so a capable non-root service works.
func checkPrivileges() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if has(unix.CAP_SYS_ADMIN) || (has(unix.CAP_BPF) && has(unix.CAP_NET_ADMIN) && has(unix.CAP_PERFMON)) {
		return nil
	}
	return ErrNotRoot
}

// checkKernel fails with a message naming the missing kernel feature.
func checkKernel() error {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return ErrNoBTF
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoBTF, err)
	}
	if _, err := spec.AnyTypeByName("bpf_struct_ops_tcp_congestion_ops"); err != nil {
		return ErrNoStructOps
	}
	return nil
}

// ensureBPFFS mounts bpffs on /sys/fs/bpf when nothing is mounted there (some
// distributions and containers do not), then creates root.
func ensureBPFFS(root string) error {
	if !strings.HasPrefix(filepath.Clean(root)+"/", "/sys/fs/bpf/") {
		return os.MkdirAll(root, 0o700)
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/bpf", &st); err != nil {
		return fmt.Errorf("bpffs: %w", err)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		if err := unix.Mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"); err != nil {
			return fmt.Errorf("mounting bpffs on /sys/fs/bpf: %w", err)
		}
	}
	return os.MkdirAll(root, 0o700)
}

// Registered lists the congestion controls the kernel currently offers.
func Registered() ([]string, error) {
	b, err := os.ReadFile(availablePath)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// IsRegistered reports whether the kernel offers a congestion control by that name.
func IsRegistered(name string) bool {
	names, err := Registered()
	if err != nil {
		return false
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// validName follows the kernel: TCP_CA_NAME_MAX is 16 bytes with the NUL.
func validName(name string) error {
	if len(name) == 0 || len(name) > 15 {
		return fmt.Errorf("congestion control name %q must be 1 to 15 characters", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("congestion control name %q: use only a-z, 0-9, '_' and '-'", name)
		}
	}
	return nil
}
