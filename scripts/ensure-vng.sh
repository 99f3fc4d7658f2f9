#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ensure-vng.sh DIR VERSION: make sure virtme-ng VERSION is installed in the
# virtualenv DIR. virtme-ng boots the shared test kernel under QEMU for the
# VM tests (internal/vmtest); Debian 12 does not package it, PyPI does.
set -euo pipefail
dir=$1 version=$2
# (pip's output is read whole: with pipefail, grep -q stopping early would
# fail the pipeline.)
if [ -x "$dir/bin/vng" ]; then
	shown=$("$dir/bin/python3" -m pip show virtme-ng 2>/dev/null || true)
	case "$shown" in *"Version: $version"*) exit 0 ;; esac
fi
if [ -e "$dir" ]; then
	# Only ever replace a virtualenv: DIR may be set by the user.
	[ -f "$dir/pyvenv.cfg" ] || { echo "ensure-vng: $dir exists and is not a virtualenv; set VNG_DIR elsewhere" >&2; exit 1; }
	rm -rf "$dir"
fi
echo "installing virtme-ng $version into $dir"
/usr/bin/python3 -m venv "$dir"
"$dir/bin/python3" -m pip install -q "virtme-ng==$version"
