#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# upstream.sh CACHE OUT [TEST...]: rebuild and rerun the kernel series in
# scripts/kernel-patches/mptcp-rx-empty/ the way a maintainer would judge it
# (make kernel-patches):
#
#   1. checkpatch.pl --strict on every patch (the kernel's own script, from
#      the source the series applies to);
#   2. Linux 7.3.4 built twice from one tree and one config: as it is (the
#      control) and with the kernel patch, 0001 (scripts/patched-kernel.sh);
#   3. the MPTCP selftests of that source with the series' selftest (0002)
#      added, built against the source's headers;
#   4. each kernel booted in QEMU (virtme-ng), the selftests run there:
#      by default shared_bottleneck.sh (the reproducer), simult_flows.sh,
#      mptcp_connect.sh and mptcp_join.sh, or the TESTs given;
#   5. a summary in OUT/summary.md: each test's exit status and failed
#      subtests per kernel, the reproducer's shares, and what the patch
#      changed. It exits 1 when the patched kernel fails a subtest the
#      control passes, or the reproducer does not fail on the control and
#      pass on the patched kernel.
#
# The series is applied to nothing the host runs. Needs what
# scripts/patched-kernel.sh needs (make kernel-patches installs it), perl,
# and virtme-ng ($VNG, else /opt/mptcp-cc-vng/bin/vng: make deps).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 CACHE OUT [TEST...]" >&2; exit 2; }
cache=$1 out=$2
shift 2
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(shared_bottleneck.sh simult_flows.sh mptcp_connect.sh mptcp_join.sh)
here=$(cd "$(dirname "$0")" && pwd)
series=$here/mptcp-rx-empty
vng=${VNG:-/opt/mptcp-cc-vng/bin/vng}
[ -x "$vng" ] || { echo "upstream: virtme-ng not found at $vng (make deps installs it, or set VNG)" >&2; exit 1; }
kpatch=$(ls "$series"/0001-*.patch)
spatch=$(ls "$series"/0002-*.patch)
mkdir -p "$out"
out=$(cd "$out" && pwd)

# 2 first: it fetches and unpacks the source the other steps read.
control=$("$here/../patched-kernel.sh" "$cache")
patched=$("$here/../patched-kernel.sh" "$cache" "$kpatch")
src=$cache/src/linux-source-7.3

# 1. checkpatch. With --no-tree it cannot look up the Fixes: commit or
# MAINTAINERS, so it warns about both (checkpatch.expected lists them):
# anything else fails.
: >"$out/checkpatch.txt"
for p in "$series"/000[1-9]-*.patch; do
	perl "$src/scripts/checkpatch.pl" --no-tree --strict "$p" >>"$out/checkpatch.txt" 2>&1 || true
done
got=$(grep -E '^(ERROR|WARNING|CHECK):' "$out/checkpatch.txt" | sort || true)
want=$(sort "$series/checkpatch.expected")
if [ "$got" != "$want" ]; then
	echo "upstream: checkpatch found what checkpatch.expected does not list:" >&2
	diff <(echo "$want") <(echo "$got") >&2 || true
	exit 1
fi

# 3. The selftests, outside the kernel tree (patched-kernel.sh owns its
# state): the MPTCP directory and the net/ helpers it sources.
st=$out/selftests
rm -rf "$st"
mkdir -p "$st/tools/testing/selftests/net"
cp -r "$src/tools/testing/selftests/net/mptcp" "$src/tools/testing/selftests/net/lib.sh" \
	"$src/tools/testing/selftests/net/lib" "$st/tools/testing/selftests/net/"
patch -s -p1 -d "$st" <"$spatch"
make -s -C "$src" headers >&2
dir=$st/tools/testing/selftests/net/mptcp
for prog in mptcp_connect pm_nl_ctl mptcp_diag mptcp_inq mptcp_sockopt; do
	gcc -Wall -O2 -g -I"$src/usr/include" -I"$src/tools/include" -o "$dir/$prog" "$dir/$prog.c"
done

# 4. Each kernel in a VM, one after the other (timing matters to the
# reproducer: run nothing else meanwhile). The guest sees the host's
# files read-only and writes only OUT.
export PATH="$(dirname "$(readlink -f "$vng")"):$PATH"
for k in control patched; do
	image=$control
	[ $k = patched ] && image=$patched
	mkdir -p "$out/$k"
	rm -f "$out/$k/"*
	cmd="cd $dir && for t in ${tests[*]}; do ./\$t >$out/$k/\$t.log 2>&1; echo \"\$t \$?\" >>$out/$k/status; done"
	echo "upstream: $k kernel ($(basename "$image")): ${tests[*]}" >&2
	timeout -k 10 14400 "$vng" --run "$image" --user root --memory 2G --cpus 2 --cwd / \
		--disable-kvm --rwdir="$out" --exec "$cmd" </dev/null >"$out/$k/console.log" 2>&1 || true
	[ -s "$out/$k/status" ] || { echo "upstream: the $k kernel ran no test (console: $out/$k/console.log)" >&2; exit 1; }
done

# 5. The summary.
status() { awk -v t="$2" '$1 == t { print $2 }' "$out/$1/status"; }
# A failed subtest by its name, without its number or its time.
notok() { grep -E '^not ok ' "$out/$1/$2.log" 2>/dev/null | sed -E 's/^not ok [0-9]+ //; s/ # time=[0-9]+ms$//' | sort || true; }
shares() { grep -oE 'share [0-9]+% of the TCP flow' "$out/$1/shared_bottleneck.sh.log" 2>/dev/null | grep -oE '[0-9]+' | paste -sd' ' || true; }
rc=0
{
	echo "# The series on Linux 7.3.4: control and patched kernels"
	echo
	echo "$(date -u +%F), $(basename "$control") and $(basename "$patched"), QEMU without KVM, 2 vCPUs."
	echo
	echo "| test | control: exit, failed subtests | patched: exit, failed subtests | new failures with the patch |"
	echo "|---|---|---|---|"
	for t in "${tests[@]}"; do
		new=$(comm -13 <(notok control "$t") <(notok patched "$t") | paste -sd';' || true)
		[ -z "$new" ] || rc=1
		echo "| $t | $(status control "$t"), $(notok control "$t" | wc -l) | $(status patched "$t"), $(notok patched "$t" | wc -l) | ${new:-none} |"
	done
	if [[ " ${tests[*]} " == *" shared_bottleneck.sh "* ]]; then
		echo
		echo "shared_bottleneck.sh, the connection's throughput over the TCP flow's per run (percent): control $(shares control), patched $(shares patched)."
		[ "$(status control shared_bottleneck.sh)" != 0 ] && [ "$(status patched shared_bottleneck.sh)" = 0 ] || rc=1
	fi
} >"$out/summary.md"
cat "$out/summary.md"
exit $rc
