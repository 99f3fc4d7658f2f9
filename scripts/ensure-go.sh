#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ensure-go.sh MIN TOOLCHAIN: make sure a Go >= MIN is on PATH.
# Debian 12 ships Go 1.19; if no recent Go is found, fetch the official
# toolchain module from the Go module proxy into /usr/local/go and link it
# into /usr/local/bin.
set -euo pipefail
min=$1 toolchain=$2

have_recent() {
	command -v go >/dev/null 2>&1 || return 1
	local v
	v=$(go env GOVERSION 2>/dev/null | sed 's/^go//') || return 1
	[ "$(printf '%s\n%s\n' "$min" "$v" | sort -V | head -n1)" = "$min" ]
}

if have_recent; then exit 0; fi
[ -x /usr/local/go/bin/go ] && PATH=/usr/local/go/bin:$PATH && have_recent && {
	ln -sf /usr/local/go/bin/go /usr/local/bin/go; exit 0; }

proxy=${GOPROXY:-https://proxy.golang.org}
proxy=${proxy%%,*}
mod="golang.org/toolchain/@v/v0.0.1-${toolchain}.linux-$(dpkg --print-architecture).zip"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching Go ${toolchain} from ${proxy}"
curl -fsSL -o "$tmp/go.zip" "${proxy}/${mod}"
unzip -q "$tmp/go.zip" -d "$tmp"
rm -rf /usr/local/go
mv "$tmp"/golang.org/toolchain@*/ /usr/local/go
ln -sf /usr/local/go/bin/go /usr/local/bin/go
go version
