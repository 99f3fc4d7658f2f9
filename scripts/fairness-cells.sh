#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fairness-cells.sh: the fairness matrix one cell at a time, resumable
# (make fairness-aqm; issue 30, docs/results/fairness.md "Behind AQM").
#
# A cell is one base RTT, subflow count and bottleneck discipline, with
# every arm of FAIRNESS_CELLS_SPEC (TestBenchFairness's FAIRNESS keys)
# measured in it. Each cell is its own `go test` run under REPRO_LOCK, its
# table written to OUT/CELL.md (and its chart to OUT/CELL.svg) only once
# it finished: a cell whose file exists is not run again, so a matrix of
# hours that a restart cut short goes on where it stopped (delete a cell's
# file to measure it again). At the end OUT/table.md holds the rows of
# every finished cell under one header, in the matrix's order.
#
# Environment (the Makefile sets each): GO, REPRO_LOCK, OUT, RTTS,
# SUBFLOWS, AQMS, QUEUES (space-separated lists) and SPEC (the rest of the
# FAIRNESS spec, e.g. "ref=reno runs=5").
set -euo pipefail

: "${GO:=go}" "${REPRO_LOCK:=/tmp/mptcp-cc-net.lock}" "${OUT:?OUT: the directory the cells are kept in}"
: "${RTTS:?}" "${SUBFLOWS:?}" "${AQMS:?}" "${QUEUES:?}" "${SPEC:=ref=reno runs=5}"

mkdir -p "$OUT/.running"
cells=()
for rtt in $RTTS; do
	for sub in $SUBFLOWS; do
		for aqm in $AQMS; do
			for q in $QUEUES; do
				cell="rtt${rtt}-${q}-${aqm}-${sub}sf"
				cells+=("$cell")
				if [[ -f "$OUT/$cell.md" ]]; then
					echo "fairness-cells: $cell kept from an earlier run ($OUT/$cell.md)"
					continue
				fi
				echo "fairness-cells: $cell: measuring (rtt=$rtt queue=$q subflows=$sub aqm=$aqm $SPEC)"
				start=$(date +%s)
				MPTCP_CC_BENCH=1 FAIRNESS="rtt=$rtt queue=$q subflows=$sub aqm=$aqm $SPEC" \
					FAIRNESS_OUT="$OUT/.running/$cell.md" \
					flock "$REPRO_LOCK" "$GO" test -count=1 -timeout 0 -run '^TestBenchFairness$' -v ./pkg/cc/ \
					>"$OUT/.running/$cell.log" 2>&1 || {
					echo "fairness-cells: $cell failed; its log: $OUT/.running/$cell.log" >&2
					tail -20 "$OUT/.running/$cell.log" >&2
					exit 1
				}
				mv "$OUT/.running/$cell.log" "$OUT/$cell.log"
				mv "$OUT/.running/$cell.svg" "$OUT/$cell.svg"
				mv "$OUT/.running/$cell.md" "$OUT/$cell.md" # last: the cell counts as done
				echo "fairness-cells: $cell done in $(($(date +%s) - start)) s"
			done
		done
	done
done

# One table: the first finished cell's header and every cell's rows.
{
	header=""
	for cell in "${cells[@]}"; do
		f="$OUT/$cell.md"
		[[ -f $f ]] || continue
		if [[ -z $header ]]; then
			header=done
			grep -m1 '^Bottleneck' "$f" || true
			echo
			grep '^| base RTT' "$f"
			grep -m1 '^|---' "$f"
		fi
		# The cell's rows: its table's lines after the separator, up to
		# the first line that is not a row (the ACK table, if any, follows).
		awk '/^\|---/ { rows = 1; next } rows && /^\| / { print; next } rows { exit }' "$f"
	done
} >"$OUT/table.md"
echo "fairness-cells: $OUT/table.md ($(grep -c '^| [0-9]' "$OUT/table.md" || true) rows)"
