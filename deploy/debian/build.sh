#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Assembles mptcp-cc_VERSION_ARCH.deb from what `make deb` built; run by
# it, from the top of the source tree, with these variables set:
#
#   DEB_VERSION DEB_ARCH DEB_MAINTAINER   control fields
#   DEB_PROGS  the commands (mptcp-cc mptcp-lab mptcp-xfer)
#   DEB_BIN    directory with their static binaries
#   DEB_DOCS   where `make gen-docs` wrote man/ and completions/
#   DEB_STAGE  scratch directory (emptied)
#   DEB_OUT    where the .deb goes
#   GO         the go command (for the embedded modules' licenses)
#
# No debhelper: dpkg-deb only, which every Debian system has.
set -eu

progs=$DEB_PROGS
pkg=deploy/debian
root=$DEB_STAGE/root
doc=$root/usr/share/doc/mptcp-cc
deb=$DEB_OUT/mptcp-cc_${DEB_VERSION}_${DEB_ARCH}.deb

# The commit's time, not the build's: two builds of one commit give the
# same package (dpkg-deb clamps every timestamp to it).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

# The license texts of what the static binaries contain: Go's standard
# library and every module `go version -m` lists in them.
licenses() {
	echo "The mptcp-cc binaries contain this code, under these licenses."
	echo
	echo "=== The Go standard library ($($GO env GOVERSION))"
	cat "$($GO env GOROOT)/LICENSE"
	mods=$(for p in $progs; do $GO version -m "$DEB_BIN/$p"; done | awk '$1 == "dep" { print $2 }' | LC_ALL=C sort -u)
	for m in $mods; do
		dir=$($GO list -m -f '{{.Dir}}' "$m")
		files=$(ls "$dir"/LICENSE* "$dir"/COPYING* 2>/dev/null || true)
		if [ -z "$files" ]; then
			echo "$pkg/build.sh: the module $m has no LICENSE or COPYING file in $dir: the package must carry its license; add it to third-party-licenses here" >&2
			return 1
		fi
		echo
		echo "=== $m ($($GO list -m -f '{{.Version}}' "$m"))"
		cat $files
	done
}

need() {
	[ -f "$1" ] || { echo "$pkg/build.sh: $1 is missing: $2" >&2; exit 1; }
}
for p in $progs; do
	need "$DEB_BIN/$p" "make deb builds it (see the Makefile's deb target)"
	need "$DEB_DOCS/man/$p.1" "make gen-docs writes it"
	need "$DEB_DOCS/completions/bash/$p" "make gen-docs writes it"
	need "$DEB_DOCS/completions/zsh/_$p" "make gen-docs writes it"
done

rm -rf "$root"
umask 022
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/mptcp-cc" \
	"$root/usr/share/man/man1" "$root/usr/share/bash-completion/completions" \
	"$root/usr/share/zsh/vendor-completions" "$doc/docs"

for p in $progs; do
	install -m 0755 "$DEB_BIN/$p" "$root/usr/bin/$p"
	gzip -9n -c "$DEB_DOCS/man/$p.1" >"$root/usr/share/man/man1/$p.1.gz"
	install -m 0644 "$DEB_DOCS/completions/bash/$p" "$root/usr/share/bash-completion/completions/$p"
	install -m 0644 "$DEB_DOCS/completions/zsh/_$p" "$root/usr/share/zsh/vendor-completions/_$p"
done

# deploy/mptcp-cc.service stays the one unit: the package's differs only in
# where things are installed, and loses the from-source install steps of
# its header comment.
sed -e '/^# From source:$/,/^#$/d' -e 's|/usr/local/|/usr/|g' deploy/mptcp-cc.service \
	>"$root/lib/systemd/system/mptcp-cc.service"
chmod 0644 "$root/lib/systemd/system/mptcp-cc.service"

install -m 0644 "$pkg/config.yaml" "$root/etc/mptcp-cc/config.yaml"

# The docs keep the source tree's layout, so the README's links to
# docs/*.md work where they are installed.
install -m 0644 README.md "$doc/README.md"
install -m 0644 docs/*.md "$doc/docs/"
install -m 0644 "$pkg/copyright" "$doc/copyright"
{
	echo "mptcp-cc ($DEB_VERSION) unstable; urgency=medium"
	echo
	echo "  * Built from commit $(git rev-parse HEAD 2>/dev/null || echo unknown)."
	echo
	echo " -- $DEB_MAINTAINER  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$doc/changelog.gz"
licenses >"$doc/third-party-licenses"

for f in postinst prerm postrm; do
	install -m 0755 "$pkg/$f" "$root/DEBIAN/$f"
done
install -m 0644 "$pkg/conffiles" "$root/DEBIAN/conffiles"
# dpkg keeps the conffiles' sums itself, so md5sums lists every other file.
conf=$(sed 's|^/||' "$pkg/conffiles")
(cd "$root" && find . -type f ! -path './DEBIAN/*' | sed 's|^\./||' | LC_ALL=C sort |
	grep -vxF "$conf" | xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$DEB_VERSION|" -e "s|@ARCH@|$DEB_ARCH|" \
	-e "s|@MAINTAINER@|$DEB_MAINTAINER|" -e "s|@INSTALLED_SIZE@|$size|" \
	"$pkg/control" >"$root/DEBIAN/control"
chmod 0644 "$root/DEBIAN/control"

mkdir -p "$DEB_OUT"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
