// SPDX-License-Identifier: Apache-2.0

package kernel

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"strconv"
	"strings"
)

// HZ is the running kernel's timer frequency (CONFIG_HZ), from
// /proc/config.gz or /boot/config-RELEASE, or 0 when neither says. TCP's
// timers count in its ticks, so the shortest timer the kernel accepts
// through TCP_BPF_DELACK_MAX (two ticks) depends on it: 8 ms at HZ=250,
// 2 ms at HZ=1000.
func HZ() int {
	if f, err := os.Open(file("/proc/config.gz")); err == nil {
		defer f.Close()
		if z, err := gzip.NewReader(f); err == nil {
			if hz := configHZ(z); hz > 0 {
				return hz
			}
		}
	}
	if f, err := os.Open(file("/boot/config-" + Release())); err == nil {
		defer f.Close()
		return configHZ(f)
	}
	return 0
}

func configHZ(r io.Reader) int {
	s := bufio.NewScanner(r)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CONFIG_HZ="); ok {
			hz, err := strconv.Atoi(v)
			if err == nil && hz > 0 {
				return hz
			}
		}
	}
	return 0
}
