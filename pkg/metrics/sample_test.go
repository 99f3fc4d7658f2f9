// SPDX-License-Identifier: Apache-2.0

package metrics

import dto "github.com/prometheus/client_model/go"

// SampleOf returns one exported sample's labels and value (gauge, counter
// or untyped): what the tests compare. Exported for the package's external
// tests too (kernel_test.go); it exists only in test builds.
func SampleOf(m *dto.Metric) (labels map[string]string, value float64) {
	labels = map[string]string{}
	for _, l := range m.Label {
		labels[l.GetName()] = l.GetValue()
	}
	switch {
	case m.Gauge != nil:
		value = m.Gauge.GetValue()
	case m.Counter != nil:
		value = m.Counter.GetValue()
	case m.Untyped != nil:
		value = m.Untyped.GetValue()
	}
	return labels, value
}
