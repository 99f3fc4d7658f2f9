#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds a release of the checkout: for each architecture, an archive
# mptcp-cc_VERSION_linux_ARCH.tar.gz and the Debian package
# mptcp-cc_VERSION_ARCH.deb, then SHA256SUMS over them. Run by `make
# release` (docs/releasing.md), from the top of the source tree, after
# `make gen-docs` (man pages and completions come from the host's binaries:
# they are the same for every architecture). Variables:
#
#   RELEASE_OUT      where the files go (emptied of earlier release files)
#   RELEASE_ARCHS    Go architectures (default: amd64 arm64)
#   RELEASE_VERSION  default: deploy/debian/version.sh (git describe)
#   LDFLAGS          the Makefile's -X flags (version, commit)
#   GO, DEB_MAINTAINER
#
# Reproducible: every input is the commit's. The binaries are built with
# -trimpath (no path of this checkout in them); the archives list files in
# name order with the commit's time, root's numeric owner and fixed modes,
# and gzip stores no name or time; the packages are dpkg-deb's, clamped to
# SOURCE_DATE_EPOCH (deploy/debian/build.sh). Two runs give the same sums.
set -eu

out=${RELEASE_OUT:-dist}
archs=${RELEASE_ARCHS:-amd64 arm64}
GO=${GO:-go}
progs="mptcp-cc mptcp-lab mptcp-xfer"
version=${RELEASE_VERSION:-$(deploy/debian/version.sh)}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

for p in $progs; do
	[ -f "build/man/$p.1" ] || { echo "scripts/release.sh: build/man/$p.1 is missing: run it through make release (make gen-docs writes it)" >&2; exit 1; }
done
case $version in
*dirty*) echo "scripts/release.sh: warning: the tree has uncommitted changes: version $version is not a release anyone can rebuild" >&2 ;;
esac

mkdir -p "$out"
rm -f "$out"/mptcp-cc_* "$out"/SHA256SUMS
umask 022

for arch in $archs; do
	stage=build/release/$arch
	rm -rf "$stage"
	mkdir -p "$stage/bin"
	echo "release: $version linux/$arch"
	# shellcheck disable=SC2086 # the packages are separate words
	GOOS=linux GOARCH=$arch CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w $LDFLAGS" \
		-o "$stage/bin/" $(for p in $progs; do printf './cmd/%s ' "$p"; done)

	# The archive: a prefix tree (bin/, lib/systemd/, share/), so
	# `tar -xzf ... --strip-components=1 -C /usr/local` installs it where
	# deploy/mptcp-cc.service expects it, and etc/ for /etc.
	name=mptcp-cc_${version}_linux_${arch}
	root=$stage/$name
	mkdir -p "$root/bin" "$root/share/man/man1" "$root/share/bash-completion/completions" \
		"$root/share/zsh/vendor-completions" "$root/lib/systemd/system" "$root/etc/mptcp-cc" \
		"$root/share/doc/mptcp-cc/docs"
	for p in $progs; do
		install -m 0755 "$stage/bin/$p" "$root/bin/$p"
		install -m 0644 "build/man/$p.1" "$root/share/man/man1/$p.1"
		install -m 0644 "build/completions/bash/$p" "$root/share/bash-completion/completions/$p"
		install -m 0644 "build/completions/zsh/_$p" "$root/share/zsh/vendor-completions/_$p"
	done
	install -m 0644 deploy/mptcp-cc.service "$root/lib/systemd/system/mptcp-cc.service"
	install -m 0644 deploy/debian/config.yaml "$root/etc/mptcp-cc/config.yaml"
	install -m 0644 README.md CHANGELOG.md "$root/share/doc/mptcp-cc/"
	install -m 0644 docs/*.md "$root/share/doc/mptcp-cc/docs/"
	for f in LICENSE LICENSES; do
		[ -e "$f" ] && cp -R "$f" "$root/share/doc/mptcp-cc/"
	done
	find "$root" -type d -exec chmod 0755 {} +
	tar --sort=name --format=gnu --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		-C "$stage" -cf - "$name" | gzip -9n >"$out/$name.tar.gz"

	# The Debian package, from the same binaries.
	DEB_PROGS=$progs DEB_VERSION=$version DEB_ARCH=$arch \
		DEB_MAINTAINER=${DEB_MAINTAINER:?set by the Makefile} \
		DEB_BIN=$stage/bin DEB_DOCS=build DEB_STAGE=$stage/deb DEB_OUT=$out GO=$GO \
		deploy/debian/build.sh >/dev/null
done

(cd "$out" && sha256sum mptcp-cc_"$version"_* >SHA256SUMS)
echo "release $version in $out:"
sed 's/^/  /' "$out/SHA256SUMS"
