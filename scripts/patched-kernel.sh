#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# patched-kernel.sh CACHE [PATCH]: build the shared test kernel's Linux
# (Debian's linux-source-7.3, 7.3.4, the test kernel's own config) with
# PATCH applied, or as it is without one (the control), and print the
# image's path: CACHE/images/vmlinuz-7.3.4-mpcc-NAME, NAME being the
# patch's file name without .patch (for a patch of a git format-patch
# series, NNNN-*.patch, its directory's name), or "control". The VM tests boot it
# with MPTCP_CC_VM_KIMG, so a proposed kernel fix is measured against a
# control built the same way (make repro-ack-patch).
#
# Why not the test kernel itself as the control: it carries
# mptcp_net-next's scheduler hook and was built with another pahole; a
# control from the same tree, config and tools as the patched kernel
# leaves the patch as the only difference.
#
# Needs gcc, make, flex, bison, bc, libelf-dev, libssl-dev, cpio and
# pahole (dwarves); make repro-ack-patch installs them. One build takes
# about 15 minutes on 2 cores; the second (only the patch's files and the
# link) a few. An image is built again only when its patch changed.
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 CACHE [PATCH]" >&2; exit 2; }
cache=$1 patch=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
config=${KCONFIG:-$here/../../shared/kernels/mptcp-bpf-sched/config}
srcpkg=linux-source-7.3 srcver=7.3.4-1~bpo13+1 release=7.3.4

[ -r "$config" ] || { echo "patched-kernel: no kernel config at $config (set KCONFIG to the test kernel's config file)" >&2; exit 1; }
for tool in gcc make flex bison bc pahole cpio; do
	command -v "$tool" >/dev/null || { echo "patched-kernel: $tool is missing (make repro-ack-patch installs the kernel's build tools)" >&2; exit 1; }
done
if [ -n "$patch" ]; then
	[ -r "$patch" ] || { echo "patched-kernel: no patch at $patch" >&2; exit 1; }
	patch=$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")
	name=$(basename "$patch" .patch)
	# A patch of a series (NNNN-subject.patch) is named by its series'
	# directory: the kernel's release string has room for a short name only.
	[[ $name =~ ^[0-9]{4}- ]] && name=$(basename "$(dirname "$patch")")
	sum=$(sha256sum "$patch" | cut -d' ' -f1)
else
	name=control sum=none
fi
image=$cache/images/vmlinuz-$release-mpcc-$name
if [ -r "$image" ] && [ "$(cat "$image.patch-sum" 2>/dev/null)" = "$sum" ]; then
	echo "$image"
	exit 0
fi

# The source, once, with a private apt state (scripts/debian-apt.sh).
src=$cache/src/linux-source-7.3
if [ ! -e "$src/.unpacked" ]; then
	. "$here/debian-apt.sh"
	debian_apt_init "$cache/.apt"
	debian_apt_has "$srcpkg=$srcver" || { echo "patched-kernel: Debian's archive no longer has $srcpkg $srcver" >&2; exit 1; }
	debian_apt_download "$srcpkg=$srcver"
	rm -rf "$cache/src"
	mkdir -p "$cache/src"
	dpkg-deb --fsys-tarfile "$APT_DIR/archives/"${srcpkg}_*.deb |
		tar -xO --wildcards "./usr/src/$srcpkg.tar.xz" | tar -xJ -C "$cache/src"
	rm -f "$APT_DIR/archives/"*.deb
	touch "$src/.unpacked"
fi

# One tree serves every variant: take back the patch the last build
# applied, then apply this one. Only the files they touch are rebuilt.
applied=$src/.mpcc-applied
if [ -s "$applied" ]; then
	patch -s -R -p1 -d "$src" <"$applied"
	: >"$applied"
fi
if [ -n "$patch" ]; then
	patch -s -p1 -d "$src" <"$patch"
	cp "$patch" "$applied"
fi

cp "$config" "$src/.config"
"$src/scripts/config" --file "$src/.config" --set-str LOCALVERSION "-mpcc-$name"
make -C "$src" -s olddefconfig >&2
echo "patched-kernel: building $release-mpcc-$name (log: $cache/build-$name.log)" >&2
if ! nice -n 19 make -C "$src" -j"$(nproc)" bzImage >"$cache/build-$name.log" 2>&1; then
	tail -20 "$cache/build-$name.log" >&2
	echo "patched-kernel: the build failed (log: $cache/build-$name.log)" >&2
	exit 1
fi
mkdir -p "$cache/images"
cp "$src/arch/x86/boot/bzImage" "$image"
echo "$sum" >"$image.patch-sum"
echo "$image"
