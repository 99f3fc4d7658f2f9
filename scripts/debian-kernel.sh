#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# debian-kernel.sh VERSION CACHE: fetch Debian's kernel VERSION (for example
# 6.1.0-57 (Debian 12's own), 6.12.117+deb12, 6.18.15+deb13, 7.2.13+deb14:
# the part of the package name linux-image-VERSION-amd64[-unsigned]) into CACHE/VERSION and print the path of its
# image. The VM tests boot it in place of the shared test kernel
# (MPTCP_CC_VM_KIMG, internal/vmtest), to find which kernels show a fault.
#
# Why a private apt state: the packages come from suites this host does not
# use (bookworm-security, trixie, trixie-backports, sid), and the host's
# sources and package lists must stay as they are. Nothing is installed: the
# package is unpacked, and depmod indexes its modules there, because Debian's
# kernels build veth, sch_tbf, mptcp_diag and virtio's 9p as modules, which
# virtme-ng loads from beside the image (it needs busybox for that).
#
# DEBIAN_ARCH=arm64 fetches the arm64 kernel instead (into
# CACHE/VERSION-arm64, with its own apt state), for the kernel matrix's
# arm64 VM (lab/matrix).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 VERSION CACHE (VERSION as in linux-image-VERSION-amd64, e.g. 6.12.117+deb12)" >&2; exit 2; }
version=$1 cache=$2 arch=${DEBIAN_ARCH:-amd64}
pkg=linux-image-$version-$arch
dir=$cache/$version apt=$cache/.apt
if [ "$arch" != amd64 ]; then
	dir=$cache/$version-$arch apt=$cache/.apt-$arch
fi
# Where the image lands: boot/ in the older packages, the modules'
# directory in the split ones (linux-binary-*, e.g. 7.2.13+deb14).
image() {
	local k
	for k in "$dir/boot/vmlinuz-$version-$arch" "$dir/usr/lib/modules/$version-$arch/vmlinuz"; do
		[ -r "$k" ] && { echo "$k"; return 0; }
	done
	return 1
}

if [ -e "$dir/.complete" ] && image; then
	exit 0
fi

. "$(dirname "$0")/debian-apt.sh"
debian_apt_init "$apt" "$arch"
# Some versions are in the archive only as the unsigned image (bookworm's
# 6.1.0-57: linux-image-6.1.0-57-amd64-unsigned); it holds the same kernel.
if ! debian_apt_has "$pkg" && debian_apt_has "$pkg-unsigned"; then
	pkg=$pkg-unsigned
fi
if ! debian_apt_has "$pkg"; then
	echo "debian-kernel: Debian's archive has no $pkg now; these are there:" >&2
	apt-cache "${APT_OPTS[@]}" search --names-only "^linux-image-[0-9].*-$arch\$" 2>/dev/null |
		awk '{print $1}' | grep -v -e -cloud- -e -rt- | sed "s/^linux-image-//; s/-$arch\$//" | sort -V | tr '\n' ' ' >&2
	echo >&2
	exit 1
fi
# Newer packages (7.2.13+deb14) split the image package: the kernel is in
# linux-binary-*, its modules in linux-modules-*; fetch those where they are.
pkgs=("$pkg")
for part in linux-binary-$version-$arch linux-modules-$version-$arch; do
	if apt-cache "${APT_OPTS[@]}" show "$part" >/dev/null 2>&1; then
		pkgs+=("$part")
	fi
done
debian_apt_download "${pkgs[@]}"
rm -rf "$dir"
mkdir -p "$dir"
for deb in "$APT_DIR/archives/"*.deb; do
	dpkg-deb -x "$deb" "$dir"
done
rm -f "$APT_DIR/archives/"*.deb
image >/dev/null || { echo "debian-kernel: ${pkgs[*]} unpacked into $dir, but no kernel image is there" >&2; exit 1; }
# Packages from trixie on put the modules under usr/ (merged /usr); this
# host's depmod and the guest's modprobe look in lib/modules.
if [ ! -e "$dir/lib" ] && [ -d "$dir/usr/lib/modules" ]; then
	ln -s usr/lib "$dir/lib"
fi
depmod -b "$dir" "$version-$arch"
touch "$dir/.complete"
image
