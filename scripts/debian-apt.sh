# SPDX-License-Identifier: Apache-2.0
# debian-apt.sh: sourced by the scripts that fetch packages from Debian
# suites this host does not use (bookworm for Debian 12's own 6.1 kernel,
# bookworm-backports, bookworm-security, trixie, trixie-backports, sid). debian_apt_init DIR [ARCH] sets up a private apt state
# in DIR (APT_DIR) for ARCH (default amd64; arm64 for the arm64 VM of the
# kernel matrix) and leaves its options in the array APT_OPTS: the
# host's sources and package lists stay as they are, and nothing is
# installed.
debian_apt_init() {
	local apt=$1 arch=${2:-amd64} key=/usr/share/keyrings/debian-archive-keyring.gpg
	APT_DIR=$apt
	mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/etc/preferences.d" "$apt/etc/sources.list.d"
	cat >"$apt/etc/sources.list" <<EOS
deb [signed-by=$key] http://deb.debian.org/debian bookworm main
deb [signed-by=$key] http://deb.debian.org/debian bookworm-backports main
deb [signed-by=$key] http://deb.debian.org/debian-security bookworm-security main
deb [signed-by=$key] http://deb.debian.org/debian trixie main
deb [signed-by=$key] http://deb.debian.org/debian trixie-backports main
deb [signed-by=$key] http://deb.debian.org/debian sid main
EOS
	APT_OPTS=(-o "Dir::State=$apt" -o "Dir::State::Lists=$apt/lists" -o Dir::State::status=/dev/null
		-o "Dir::Cache=$apt" -o "Dir::Cache::archives=$apt/archives"
		-o "Dir::Etc::SourceList=$apt/etc/sources.list" -o "Dir::Etc::SourceParts=$apt/etc/sources.list.d"
		-o "Dir::Etc::Preferences=$apt/etc/preferences" -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d"
		-o APT::Architecture=$arch -o APT::Architectures=$arch -o APT::Sandbox::User=root -q)
}

# debian_apt_has PKG[=VERSION]: is it in the lists? The lists are fetched
# again when it is not: the suites move on, and old versions leave them.
# (apt-cache show exits 0 for a version it does not know, printing
# nothing: what it prints decides.)
debian_apt_has() {
	[ -n "$(apt-cache "${APT_OPTS[@]}" show "$1" 2>/dev/null)" ] && return 0
	apt-get "${APT_OPTS[@]}" update >&2
	[ -n "$(apt-cache "${APT_OPTS[@]}" show "$1" 2>/dev/null)" ]
}

# debian_apt_download PKG[=VERSION]...: download these packages, and only
# these, into $APT_DIR/archives (the caller unpacks and removes them).
debian_apt_download() {
	rm -f "$APT_DIR/archives/"*.deb
	(cd "$APT_DIR/archives" && apt-get "${APT_OPTS[@]}" download "$@" >&2)
}
