#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Prints the Debian version of the checkout, from `git describe`:
#
#   v1.2.3                 -> 1.2.3
#   v1.2.3-rc1             -> 1.2.3~rc1       (a pre-release sorts before 1.2.3)
#   v1.2.3-4-gabc1234      -> 1.2.3+git20261123074501.abc1234
#   abc1234 (no tag yet)   -> 0.0~git20261123074501.abc1234
#   ...-dirty              -> ...+dirty
#
# The timestamp is the commit's (UTC), so builds of later commits sort
# later whatever their hashes, and a rebuild of one commit gets the same
# version. Both inputs may be given (the tests do):
#
#   version.sh [DESCRIBE [YYYYMMDDhhmmss]]
set -eu

describe=${1:-$(git describe --tags --always --dirty 2>/dev/null)} || true
if [ -z "$describe" ]; then
	echo "deploy/debian/version.sh: not a git checkout (git describe failed): set DEB_VERSION, e.g. make deb DEB_VERSION=1.2.3" >&2
	exit 1
fi
stamp=${2:-$(TZ=UTC0 git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S)}

dirty=
case $describe in
*-dirty) dirty=+dirty; describe=${describe%-dirty} ;;
esac

if printf '%s\n' "$describe" | grep -Eq '^[0-9a-f]{4,40}$'; then
	version=0.0~git$stamp.$describe
else
	tag=${describe#v}
	if printf '%s\n' "$tag" | grep -Eq -- '-[0-9]+-g[0-9a-f]+$'; then
		sha=${tag##*-g}
		tag=${tag%-*-g*}
		suffix=+git$stamp.$sha
	else
		suffix=
	fi
	# Hyphens are not allowed in a version without a Debian revision; in a
	# tag they mark a pre-release, which "~" sorts before the release.
	version=$(printf '%s' "$tag" | tr - '~')$suffix
fi
version=$version$dirty

if ! printf '%s\n' "$version" | grep -Eq '^[0-9][A-Za-z0-9.+~]*$'; then
	echo "deploy/debian/version.sh: git describe says \"$describe\", which makes \"$version\", not a Debian version (it must start with a digit and hold only A-Z a-z 0-9 . + ~): tag the release vX.Y.Z, or set DEB_VERSION" >&2
	exit 1
fi
printf '%s\n' "$version"
