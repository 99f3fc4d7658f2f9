#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the agent's container image from a static mptcp-cc binary:
#
#   deploy/container/build.sh BINARY IMAGE     e.g. bin/mptcp-cc localhost/mptcp-cc:0.1.0
#
# with buildah (Debian's package; no daemon, no base image pulled: the
# image is FROM scratch and holds the binary alone). The image's creation
# time and its layer's file times are the commit's (SOURCE_DATE_EPOCH),
# so one binary always makes the same image.
set -eu
[ $# -eq 2 ] || { echo "usage: deploy/container/build.sh BINARY IMAGE" >&2; exit 2; }
bin=$1 image=$2
here=$(dirname "$0")
command -v buildah >/dev/null || { echo "deploy/container/build.sh: buildah is missing: make deps installs it (Debian package buildah)" >&2; exit 1; }
[ -x "$bin" ] || { echo "deploy/container/build.sh: $bin is not an executable: run make build first" >&2; exit 1; }
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
install -m 0755 "$bin" "$ctx/mptcp-cc"
buildah build --quiet --timestamp "$SOURCE_DATE_EPOCH" -f "$here/Containerfile" -t "$image" "$ctx"
