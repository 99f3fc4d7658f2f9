// SPDX-License-Identifier: Apache-2.0

// Package prometheus_test checks the Prometheus rules in this directory:
// promtool's own checks and unit tests (tests/*.yaml), that the unit tests
// cover every rule, that rules and the Grafana dashboard name only metrics
// the daemon exports, and (server_test.go) a real Prometheus server
// scraping a real daemon.
package prometheus_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/daemon"
)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// ruleFiles returns the rule files of this directory.
func ruleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.rules.yml")
	if err != nil || len(files) < 2 {
		t.Fatalf("want the recording and the alerting rule files here, found %v (%v)", files, err)
	}
	return files
}

// rulesOf reads every rule of every rule file.
func rulesOf(t *testing.T) []rule {
	t.Helper()
	var out []rule
	for _, f := range ruleFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rf ruleFile
		if err := yaml.Unmarshal(b, &rf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range rf.Groups {
			out = append(out, g.Rules...)
		}
	}
	return out
}

func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin := testenv.RequireTool(t, "promtool", "prometheus")
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	promtool(t, append([]string{"check", "rules"}, ruleFiles(t)...)...)
}

func TestPromtoolUnitTests(t *testing.T) {
	tests, err := filepath.Glob("tests/*.yaml")
	if err != nil || len(tests) == 0 {
		t.Fatalf("no unit tests in tests/: %v", err)
	}
	promtool(t, append([]string{"test", "rules"}, tests...)...)
}

// Every alert says what it is about and what to do, and has a severity.
func TestAlertAnnotations(t *testing.T) {
	alerts := 0
	for _, r := range rulesOf(t) {
		if r.Alert == "" {
			continue
		}
		alerts++
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: wants both a summary and a description annotation", r.Alert)
		}
		if !strings.Contains(r.Annotations["description"], "To do:") {
			t.Errorf("%s: the description does not say what to do (a \"To do:\" part)", r.Alert)
		}
		if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
		}
		if !regexp.MustCompile(`^MptcpCc[A-Z][A-Za-z]+$`).MatchString(r.Alert) {
			t.Errorf("%s: alert names are MptcpCc followed by CamelCase", r.Alert)
		}
	}
	if alerts == 0 {
		t.Fatal("no alerts")
	}
}

type unitTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string           `yaml:"alertname"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromQLExprTest []struct {
			Expr       string           `yaml:"expr"`
			ExpSamples []map[string]any `yaml:"exp_samples"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// The unit tests see every alert fire and not fire, and check the value of
// every recording rule.
func TestUnitTestsCoverEveryRule(t *testing.T) {
	fires, quiet, values := map[string]bool{}, map[string]bool{}, map[string]bool{}
	files, _ := filepath.Glob("tests/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ut unitTests
		if err := yaml.Unmarshal(b, &ut); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tc := range ut.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
			for _, e := range tc.PromQLExprTest {
				if len(e.ExpSamples) > 0 {
					values[strings.TrimSpace(e.Expr)] = true
				}
			}
		}
	}
	for _, r := range rulesOf(t) {
		switch {
		case r.Alert != "" && !fires[r.Alert]:
			t.Errorf("no unit test in tests/ sees %s fire", r.Alert)
		case r.Alert != "" && !quiet[r.Alert]:
			t.Errorf("no unit test in tests/ sees %s stay quiet", r.Alert)
		case r.Record != "" && !values[r.Record]:
			t.Errorf("no unit test in tests/ checks the value of %s (a promql_expr_test with expr: %s)", r.Record, r.Record)
		}
	}
}

// PromQL as far as metric names go: strings, label matchers, ranges and
// grouping label lists hold no metric name; a name followed by "(" is a
// function or an aggregation.
var (
	promqlNoise = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`|\\{[^}]*\\}|\\[[^\\]]*\\]")
	promqlGroup = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlToken = regexp.MustCompile(`\$\w+|[0-9][0-9a-zA-Z.]*(?:[eE][+-]?[0-9]+)?|[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	promqlWords = map[string]bool{"and": true, "or": true, "unless": true, "offset": true, "bool": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "atan2": true}
	// A Grafana template query: label_values(EXPR, LABEL).
	labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*\w+\s*\)\s*$`)
)

// metricNames returns the metric (and recording rule) names expr selects.
func metricNames(expr string) []string {
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		expr = m[1]
	}
	expr = promqlNoise.ReplaceAllString(expr, " ")
	expr = promqlGroup.ReplaceAllString(expr, " ")
	var out []string
	for _, tok := range promqlToken.FindAllString(expr, -1) {
		if strings.HasSuffix(tok, "(") || tok[0] == '$' || tok[0] >= '0' && tok[0] <= '9' {
			continue
		}
		tok = strings.TrimSpace(tok)
		if !promqlWords[strings.ToLower(tok)] && !slices.Contains(out, tok) {
			out = append(out, tok)
		}
	}
	return out
}

func TestMetricNamesParser(t *testing.T) {
	for expr, want := range map[string][]string{
		`rate(a_total{x=~"$i",y="b{c}"}[$__rate_interval]) * 8`:                              {"a_total"},
		`sum by (netns, type) (rate(b_total[1m])) / clamp_min(c + d, 1e-9)`:                  {"b_total", "c", "d"},
		`count by (j, t) (i{t!=""}) > 1 and on (j, t) count without (x) (i) == 1`:            {"i"},
		`(r unless r offset 10m) + 0 > 0 or increase(r[10m]) > 0`:                            {"r"},
		`level:m:rate1m{instance=~"$instance"} / ignoring(cc) group_left (algo) other < 1e9`: {"level:m:rate1m", "other"},
		`label_values(mptcp_cc_build_info, instance)`:                                        {"mptcp_cc_build_info"},
		`absent(up{job=~".*mptcp-cc.*"})`:                                                    {"up"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}

// dashboardExprs returns every query of the Grafana dashboard: panel
// targets and template variables.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana-dashboard.json: %v", err)
	}
	var out []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			if tg.Expr != "" {
				out = append(out, tg.Expr)
			}
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		switch q := v.Query.(type) {
		case string:
			out = append(out, q)
		case map[string]any:
			if s, ok := q["query"].(string); ok {
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return out
}

// The dashboard and the rules query only metrics the daemon exports (or
// Prometheus's own up), and recording rules that exist.
func TestNamesExist(t *testing.T) {
	names, err := daemon.MetricNames()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"up": true}
	for _, n := range names {
		known[n] = true
	}
	records := map[string]bool{}
	for _, r := range rulesOf(t) {
		if r.Record != "" {
			records[r.Record] = true
		}
	}
	check := func(where, expr string) {
		for _, n := range metricNames(expr) {
			switch {
			case strings.Contains(n, ":") && !records[n]:
				t.Errorf("%s queries %s, which no recording rule in deploy/prometheus/*.rules.yml records (expr: %s)", where, n, expr)
			case !strings.Contains(n, ":") && !known[n]:
				t.Errorf("%s queries %s, which mptcp-cc serve does not export (expr: %s)", where, n, expr)
			}
		}
	}
	usesRecord := false
	for _, e := range dashboardExprs(t) {
		check("deploy/grafana-dashboard.json", e)
		usesRecord = usesRecord || slices.ContainsFunc(metricNames(e), func(n string) bool { return records[n] })
	}
	if !usesRecord {
		t.Error("the dashboard uses no recording rule: the recording-rule name check would check nothing")
	}
	for _, r := range rulesOf(t) {
		check("rule "+r.Record+r.Alert, r.Expr)
	}
}
