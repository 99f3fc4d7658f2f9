#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# debian-rootfs.sh ARCH CACHE DIR PKG...: download Debian's packages PKG
# for ARCH (arm64) into a private apt state under CACHE and unpack them into
# DIR, without installing anything or resolving dependencies (the caller
# names every package it needs). The kernel matrix's arm64 VM (lab/matrix)
# boots an initramfs made of busybox-static and the iproute2 and ethtool
# that its network check runs, with their libraries, all from Debian's
# archive: the host's own binaries are amd64.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 ARCH CACHE DIR PKG..." >&2; exit 2; }
arch=$1 cache=$2 dir=$3
shift 3
. "$(dirname "$0")/debian-apt.sh"
debian_apt_init "$cache/.apt-$arch" "$arch"
for p in "$@"; do
	debian_apt_has "$p" || { echo "debian-rootfs: Debian's archive has no $p for $arch" >&2; exit 1; }
done
debian_apt_download "$@"
mkdir -p "$dir"
for deb in "$APT_DIR/archives/"*.deb; do
	dpkg-deb -x "$deb" "$dir"
done
rm -f "$APT_DIR/archives/"*.deb
