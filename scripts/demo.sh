#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: load a coupled congestion control and watch the subflows of a
# live MPTCP transfer on an emulated two-path network. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "the demo needs root (BPF, network namespaces): sudo make demo"; exit 1; }
exec ./bin/mptcp-demo --algo "${ALGO:-olia}" --for "${DURATION:-20s}" ${LISA:+--lisa}
