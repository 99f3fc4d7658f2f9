// SPDX-License-Identifier: Apache-2.0

// The tests of the kustomize base in this directory: every manifest decodes
// strictly into the upstream Kubernetes API types, the manifests agree with
// each other (ports, labels, volumes, the config file's path) and with the
// daemon (its configuration checker, the paths it serves and reads), and the
// Dockerfile builds the image the DaemonSet expects.
package kubernetes

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/mptcp-cc/mptcp-cc/internal/testenv"
	"github.com/mptcp-cc/mptcp-cc/pkg/daemon"
	"github.com/mptcp-cc/mptcp-cc/pkg/metrics"
	"github.com/mptcp-cc/mptcp-cc/pkg/stats"
)

// testVersion is stamped into the binary as the image's VERSION build
// argument stamps it (make build's ldflags).
const testVersion = "v0.0.0-k8stest"

// The image's binary is static and stamped, so the binary these tests build
// and run must be too: testenv.Binary's `go build` inherits these.
func TestMain(m *testing.M) {
	os.Setenv("CGO_ENABLED", "0")
	os.Setenv("GOFLAGS", "-ldflags=-X=github.com/mptcp-cc/mptcp-cc/internal/version.Version="+testVersion)
	testenv.Main(m)
}

// mptcpCC is `CGO_ENABLED=0 go build ./cmd/mptcp-cc`, built once.
func mptcpCC(t *testing.T) string { return testenv.Binary(t, "../../cmd/mptcp-cc") }

// kustomization is the part of kustomize's Kustomization this base uses;
// decoded strictly too, so a field this test does not know is an error
// rather than something silently unchecked.
type kustomization struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Namespace  string           `json:"namespace"`
	Resources  []string         `json:"resources"`
	Images     []kustomizeImage `json:"images,omitempty"`
}

type kustomizeImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
}

// serviceMonitor is the part of the Prometheus Operator's
// monitoring.coreos.com/v1 ServiceMonitor this base uses.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel  string               `json:"jobLabel,omitempty"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
			Relabelings   []struct {
				SourceLabels []string `json:"sourceLabels,omitempty"`
				TargetLabel  string   `json:"targetLabel,omitempty"`
				Action       string   `json:"action,omitempty"`
			} `json:"relabelings,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// base is the decoded kustomize base: one object of each kind.
type base struct {
	kust kustomization
	ns   corev1.Namespace
	sa   corev1.ServiceAccount
	cm   corev1.ConfigMap
	ds   appsv1.DaemonSet
	svc  corev1.Service
	mon  serviceMonitor
	np   networkingv1.NetworkPolicy
}

// object returns where a manifest of this apiVersion and kind decodes to.
func (b *base) object(apiVersion, kind string) any {
	return map[string]any{
		"v1/Namespace":      &b.ns,
		"v1/ServiceAccount": &b.sa,
		"v1/ConfigMap":      &b.cm,
		"apps/v1/DaemonSet": &b.ds,
		"v1/Service":        &b.svc,
		"monitoring.coreos.com/v1/ServiceMonitor": &b.mon,
		"networking.k8s.io/v1/NetworkPolicy":      &b.np,
	}[apiVersion+"/"+kind]
}

// load decodes kustomization.yaml and every resource it lists, strictly:
// an unknown or misspelt field, a duplicate key or a wrong type fails.
func load(t *testing.T) *base {
	t.Helper()
	var b base
	decodeStrict(t, "kustomization.yaml", &b.kust)
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f != "kustomization.yaml" && !slices.Contains(b.kust.Resources, f) {
			t.Fatalf("%s is not in kustomization.yaml's resources: `kubectl apply -k` would not apply it", f)
		}
	}
	seen := map[string]string{}
	for _, file := range b.kust.Resources {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", file, err)
		}
		if bytes.Contains(data, []byte("\n---")) {
			t.Fatalf("%s: one object per file, so each file decodes into one type", file)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		obj := b.object(tm.APIVersion, tm.Kind)
		if obj == nil {
			t.Fatalf("%s: %s %s is not a kind this base is expected to hold; add it to base.object and check it", file, tm.APIVersion, tm.Kind)
		}
		key := tm.APIVersion + "/" + tm.Kind
		if prev, dup := seen[key]; dup {
			t.Fatalf("%s and %s are both a %s", prev, file, key)
		}
		seen[key] = file
		decodeStrict(t, file, obj)
	}
	if len(seen) != 7 {
		t.Fatalf("the kustomization lists %d kinds of object (%v); the base has 7", len(seen), seen)
	}
	return &b
}

func decodeStrict(t *testing.T, file string, obj any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// The strict decoder is what catches a misspelt field, which the API
// server would drop (kubectl apply only warns): make sure it does.
func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	var ds appsv1.DaemonSet
	err := yaml.UnmarshalStrict([]byte("apiVersion: apps/v1\nkind: DaemonSet\nspec:\n  template:\n    spec:\n      hostNetwrok: true\n"), &ds)
	if err == nil || !strings.Contains(err.Error(), "hostNetwrok") {
		t.Fatalf("a misspelt field decoded without an error naming it: %v", err)
	}
}

// load checks that the kustomization lists every manifest and only
// existing ones; the rest of what ties the files together is here.
func TestKustomization(t *testing.T) {
	b := load(t)
	if b.kust.APIVersion != "kustomize.config.k8s.io/v1beta1" || b.kust.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml is %s %s", b.kust.APIVersion, b.kust.Kind)
	}
	if b.kust.Namespace != b.ns.Name {
		t.Errorf("the kustomization puts everything in namespace %q but namespace.yaml creates %q", b.kust.Namespace, b.ns.Name)
	}
	if b.ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Error("the namespace must allow the privileged Pod Security level: the agent uses hostNetwork and hostPath volumes")
	}
	img := container(t, b).Image
	if !slices.ContainsFunc(b.kust.Images, func(i kustomizeImage) bool { return i.Name == img }) {
		t.Errorf("the container's image %q has no entry in the kustomization's images, so `kustomize edit set image %s=...` cannot point it at a registry", img, img)
	}
}

// container is the DaemonSet's one container.
func container(t *testing.T, b *base) *corev1.Container {
	t.Helper()
	cs := b.ds.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("the DaemonSet has %d containers; these tests expect the agent alone", len(cs))
	}
	return &cs[0]
}

// containerPort resolves a port given by number or by name against the
// container's ports, as Kubernetes does for probes, Services and
// NetworkPolicies.
func containerPort(c *corev1.Container, p intstr.IntOrString) (corev1.ContainerPort, error) {
	for _, cp := range c.Ports {
		if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
			return cp, nil
		}
	}
	return corev1.ContainerPort{}, fmt.Errorf("port %s is not a port of container %s", p.String(), c.Name)
}

// flagValue returns the value of --name in args (--name=value or --name value).
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandArgs substitutes $(VAR) in the container's args as the kubelet does,
// with fieldRefs taken from fields (e.g. status.podIP). A reference to a
// variable the container does not define is an error: the kubelet would
// pass it on literally.
func expandArgs(c *corev1.Container, fields map[string]string) ([]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			v, ok := fields[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				return nil, fmt.Errorf("env %s: no test value for field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = v
		}
	}
	var out []string
	var err error
	for _, a := range c.Args {
		out = append(out, varRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := env[name]
			if !ok {
				err = fmt.Errorf("arg %q refers to $(%s), which the container's env does not define", a, name)
			}
			return v
		}))
	}
	return out, err
}

// testPodIP stands in for a node's address (TEST-NET-1, RFC 5737).
const testPodIP = "192.0.2.10"

// metricsPort is the container port the metrics are served on: the one the
// daemon's --web.listen-address names.
func metricsPort(t *testing.T, b *base) corev1.ContainerPort {
	t.Helper()
	c := container(t, b)
	args, err := expandArgs(c, map[string]string{"status.podIP": testPodIP})
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := flagValue(args, "web.listen-address")
	if !ok {
		t.Fatal("the container's args do not set --web.listen-address: the daemon would listen on loopback, which with hostNetwork is the node's and out of Prometheus's reach")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("--web.listen-address=%s: %v", addr, err)
	}
	if host != testPodIP {
		t.Errorf("--web.listen-address=%s: the daemon should listen on the pod's (the node's) address only", addr)
	}
	cp, err := containerPort(c, intstr.Parse(port))
	if err != nil {
		t.Fatalf("--web.listen-address=%s: %v", addr, err)
	}
	if cp.Protocol != corev1.ProtocolTCP || cp.Name == "" {
		t.Errorf("the metrics port must be TCP and named (the Service, ServiceMonitor and NetworkPolicy refer to it): %+v", cp)
	}
	if cp.HostPort != 0 && cp.HostPort != cp.ContainerPort {
		t.Errorf("with hostNetwork, hostPort %d must equal containerPort %d", cp.HostPort, cp.ContainerPort)
	}
	return cp
}

// One port everywhere: the daemon's listen address, the container port,
// the probes, the Service's targetPort, the ServiceMonitor's port name and
// the NetworkPolicy's port.
func TestMetricsPortAgrees(t *testing.T) {
	b := load(t)
	c := container(t, b)
	mp := metricsPort(t, b)
	same := func(what string, p intstr.IntOrString) {
		t.Helper()
		cp, err := containerPort(c, p)
		if err != nil {
			t.Errorf("%s: %v", what, err)
		} else if cp.ContainerPort != mp.ContainerPort {
			t.Errorf("%s is port %d, the daemon listens on %d", what, cp.ContainerPort, mp.ContainerPort)
		}
	}
	for what, p := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: missing, or not an HTTP GET on the metrics endpoint", what)
			continue
		}
		same(what, p.HTTPGet.Port)
	}
	if len(b.svc.Spec.Ports) != 1 {
		t.Fatalf("the Service has %d ports; it exists for the metrics port alone", len(b.svc.Spec.Ports))
	}
	sp := b.svc.Spec.Ports[0]
	same("the Service's targetPort", sp.TargetPort)
	if sp.Port != mp.ContainerPort || sp.Name != mp.Name {
		t.Errorf("the Service's port is %s/%d, the container's %s/%d: keep them equal so the same number works everywhere", sp.Name, sp.Port, mp.Name, mp.ContainerPort)
	}
	if b.svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Error("the Service must be headless (clusterIP: None): Prometheus scrapes each node's agent, not one behind a virtual IP")
	}
	if len(b.mon.Spec.Endpoints) != 1 || b.mon.Spec.Endpoints[0].Port != sp.Name {
		t.Errorf("the ServiceMonitor must scrape the Service's port %q: %+v", sp.Name, b.mon.Spec.Endpoints)
	}
	for _, rule := range b.np.Spec.Ingress {
		if len(rule.Ports) == 0 {
			t.Error("a NetworkPolicy ingress rule without ports opens every port")
		}
		for _, p := range rule.Ports {
			if p.Port == nil {
				t.Error("a NetworkPolicy port without a number opens every port")
				continue
			}
			same("the NetworkPolicy's port", *p.Port)
		}
	}
}

// Probes and scrapes ask the daemon's own HTTP handler for paths it serves.
func TestProbeAndScrapePathsAreServed(t *testing.T) {
	b := load(t)
	c := container(t, b)
	paths := map[string]string{"the ServiceMonitor": b.mon.Spec.Endpoints[0].Path}
	if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil {
		paths["the livenessProbe"] = c.LivenessProbe.HTTPGet.Path
	}
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil {
		paths["the readinessProbe"] = c.ReadinessProbe.HTTPGet.Path
	}
	// An empty pin root: the handler's answer, not the kernel's, is tested.
	col := metrics.NewCollector(stats.Pinned{Root: t.TempDir()}, metrics.Options{})
	srv := httptest.NewServer(metrics.Handler(col, nil))
	defer srv.Close()
	for what, p := range paths {
		if p == "" || p == "/" {
			t.Errorf("%s asks for %q, the landing page: name the endpoint", what, p)
			continue
		}
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s asks for %s, which the daemon answers with %s", what, p, resp.Status)
		}
	}
}

func TestSelectorsMatchThePods(t *testing.T) {
	b := load(t)
	pod := labels.Set(b.ds.Spec.Template.Labels)
	match := func(what string, sel *metav1.LabelSelector, target labels.Set) {
		t.Helper()
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if s.Empty() || !s.Matches(target) {
			t.Errorf("%s (%s) does not select %v", what, s, target)
		}
	}
	match("the DaemonSet's selector", b.ds.Spec.Selector, pod)
	match("the Service's selector", &metav1.LabelSelector{MatchLabels: b.svc.Spec.Selector}, pod)
	match("the NetworkPolicy's podSelector", &b.np.Spec.PodSelector, pod)
	match("the ServiceMonitor's selector", &b.mon.Spec.Selector, labels.Set(b.svc.Labels))
	if job := b.svc.Labels[b.mon.Spec.JobLabel]; job != "mptcp-cc" {
		t.Errorf("the ServiceMonitor's jobLabel %q gives job=%q; the rules and dashboards expect job=\"mptcp-cc\" as on systemd hosts", b.mon.Spec.JobLabel, job)
	}
	if b.ds.Spec.Template.Spec.ServiceAccountName != b.sa.Name {
		t.Errorf("the pods run as service account %q, the base creates %q", b.ds.Spec.Template.Spec.ServiceAccountName, b.sa.Name)
	}
}

func TestNetworkPolicyAdmitsOnlyPrometheus(t *testing.T) {
	b := load(t)
	np := b.np.Spec
	if !slices.Contains(np.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Fatal("the NetworkPolicy does not restrict ingress")
	}
	if len(np.Ingress) != 1 {
		t.Fatalf("the NetworkPolicy has %d ingress rules; one, for Prometheus, is expected", len(np.Ingress))
	}
	from := np.Ingress[0].From
	if len(from) == 0 {
		t.Fatal("the ingress rule has no `from`: it admits everyone")
	}
	for _, peer := range from {
		if peer.IPBlock != nil || peer.PodSelector == nil || len(peer.PodSelector.MatchLabels)+len(peer.PodSelector.MatchExpressions) == 0 {
			t.Errorf("an ingress peer that is not a selection of Prometheus pods: %+v", peer)
		}
	}
}

// volumeMount returns the mount at dir and its volume.
func volumeMount(t *testing.T, b *base, dir string) (corev1.VolumeMount, corev1.Volume) {
	t.Helper()
	for _, m := range container(t, b).VolumeMounts {
		if m.MountPath == dir {
			for _, v := range b.ds.Spec.Template.Spec.Volumes {
				if v.Name == m.Name {
					return m, v
				}
			}
			t.Fatalf("the mount at %s names volume %q, which the pod does not have", dir, m.Name)
		}
	}
	t.Fatalf("nothing is mounted at %s", dir)
	return corev1.VolumeMount{}, corev1.Volume{}
}

func TestVolumesMatchMounts(t *testing.T) {
	b := load(t)
	c := container(t, b)
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounted[m.Name] = true
		if m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional &&
			(c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged) {
			t.Errorf("mount %s: the API server refuses Bidirectional propagation in a container that is not privileged", m.Name)
		}
	}
	for _, v := range b.ds.Spec.Template.Spec.Volumes {
		if !mounted[v.Name] {
			t.Errorf("volume %s is mounted nowhere", v.Name)
		}
	}
	// The host's own filesystems, at the same paths as on the host, so pins
	// and cgroup paths mean the same inside the pod and on the node.
	for dir, readOnly := range map[string]bool{"/sys/fs/bpf": false, "/sys/fs/cgroup": true, "/sys/kernel/btf": true} {
		m, v := volumeMount(t, b, dir)
		if v.HostPath == nil || v.HostPath.Path != dir {
			t.Errorf("%s must be the host's %s (a hostPath volume): %+v", dir, dir, v.VolumeSource)
		}
		if m.ReadOnly != readOnly {
			t.Errorf("%s: readOnly is %v, want %v", dir, m.ReadOnly, readOnly)
		}
	}
}

// configFile returns the --config path of the container's args, after
// checking that it is a key of the ConfigMap, mounted whole.
func configFile(t *testing.T, b *base) (file string, data []byte) {
	t.Helper()
	c := container(t, b)
	file, ok := flagValue(c.Args, "config")
	if !ok {
		t.Fatal("the container's args do not pass --config: the daemon would run without the ConfigMap")
	}
	m, v := volumeMount(t, b, path.Dir(file))
	if v.ConfigMap == nil || v.ConfigMap.Name != b.cm.Name {
		t.Fatalf("%s is on volume %s, not ConfigMap %s", path.Dir(file), v.Name, b.cm.Name)
	}
	if m.SubPath != "" || !m.ReadOnly {
		t.Errorf("mount the ConfigMap whole (no subPath: the kubelet never updates one) and read-only: %+v", m)
	}
	cfg, ok := b.cm.Data[path.Base(file)]
	if !ok {
		t.Fatalf("--config=%s, but ConfigMap %s has no key %q (keys: %v)", file, b.cm.Name, path.Base(file), keys(b.cm.Data))
	}
	return file, []byte(cfg)
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// The ConfigMap's config passes the daemon's own checks, pins where the
// host's bpffs is mounted, and keeps everything in force on exit (what
// lets a rolling update hand the node over without a gap).
func TestConfigMapIsAValidDaemonConfig(t *testing.T) {
	b := load(t)
	_, data := configFile(t, b)
	cfg, err := daemon.ParseConfig(data)
	if err != nil {
		t.Fatalf("the ConfigMap's config:\n%v", err)
	}
	r := cfg.Resolve()
	if r.OnExit != daemon.OnExitKeep {
		t.Errorf("on_exit is %s: a rolling update stops the old pod before starting the new one, and with anything but keep the node's connections would get the default CC in between", r.OnExit)
	}
	for field, dir := range map[string]string{"bpffs": r.BPFFS, "policy_bpffs": r.PolicyBPFFS} {
		if !strings.HasPrefix(dir, "/sys/fs/bpf/") {
			t.Errorf("%s: %s is not in the host's bpffs (mounted at /sys/fs/bpf): the pins would die with the pod", field, dir)
		}
	}
}

// The container's own arguments, with the ConfigMap's file, pass
// `mptcp-cc serve --config.check`: the flags that override the file
// (the listen address above all) are valid with it.
func TestContainerArgsPassConfigCheck(t *testing.T) {
	b := load(t)
	c := container(t, b)
	file, data := configFile(t, b)
	if len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("the container must keep the image's ENTRYPOINT (no command) and run `serve`: command %q args %q", c.Command, c.Args)
	}
	args, err := expandArgs(c, map[string]string{"status.podIP": testPodIP})
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), path.Base(file))
	if err := os.WriteFile(local, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if strings.HasPrefix(a, "--config=") {
			args[i] = "--config=" + local
		}
	}
	out, err := exec.Command(mptcpCC(t), append(args, "--config.check")...).CombinedOutput()
	if err != nil {
		t.Fatalf("mptcp-cc %s --config.check: %v\n%s", strings.Join(args, " "), err, out)
	}
	mp := metricsPort(t, b)
	if want := fmt.Sprintf("metrics on %s", net.JoinHostPort(testPodIP, fmt.Sprint(mp.ContainerPort))); !strings.Contains(string(out), want) {
		t.Errorf("--config.check says %q; want %q", out, want)
	}
}

// measuredRSS is the daemon's resident memory (README, "The daemon").
var measuredRSS = resource.MustParse("30Mi")

func TestPodSpec(t *testing.T) {
	b := load(t)
	spec := b.ds.Spec.Template.Spec
	c := container(t, b)
	if !spec.HostNetwork {
		t.Error("hostNetwork: the agent must see the node's MPTCP connections and path-manager events")
	}
	if spec.HostPID || spec.HostIPC {
		t.Error("the agent looks at no host process: no hostPID, no hostIPC")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the agent never calls the Kubernetes API: automountServiceAccountToken: false")
	}

	u := b.ds.Spec.UpdateStrategy
	if u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil || u.RollingUpdate.MaxUnavailable == nil {
		t.Error("updateStrategy: RollingUpdate with maxUnavailable")
	} else if s := u.RollingUpdate.MaxSurge; s != nil && s.String() != "0" {
		t.Errorf("maxSurge %s: a second pod on a node would bind the same host port and adopt the same pins", s)
	}
	// The daemon's stop: at most 5 s for running scrapes, then on_exit.
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g < 10 {
		t.Errorf("terminationGracePeriodSeconds %v: the daemon may take 5 s to let scrapes finish, then runs on_exit", g)
	}

	req, lim := c.Resources.Requests, c.Resources.Limits
	mem, ok := lim[corev1.ResourceMemory]
	if !ok {
		t.Fatal("no memory limit")
	}
	if twice := measuredRSS.Value() * 2; mem.Value() < twice {
		t.Errorf("memory limit %s is less than twice the measured RSS (%s)", mem.String(), measuredRSS.String())
	}
	if r, ok := req[corev1.ResourceMemory]; !ok || r.Cmp(mem) > 0 || r.Cmp(measuredRSS) < 0 {
		t.Errorf("memory request %s: at least the measured RSS (%s), at most the limit (%s)", r.String(), measuredRSS.String(), mem.String())
	}
	if _, ok := req[corev1.ResourceCPU]; !ok {
		t.Error("no CPU request")
	}
}

// wantCaps is what the daemon needs (the capability test runs it with
// exactly the DaemonSet's set); the others of the systemd unit are not.
var wantCaps = []corev1.Capability{"BPF", "PERFMON", "NET_ADMIN"}

func TestSecurityContext(t *testing.T) {
	b := load(t)
	sc := container(t, b).SecurityContext
	if sc == nil {
		t.Fatal("no securityContext")
	}
	isTrue := func(p *bool) bool { return p != nil && *p }
	if sc.Privileged == nil || *sc.Privileged {
		t.Error("privileged: false, explicitly")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation: false")
	}
	if !isTrue(sc.ReadOnlyRootFilesystem) {
		t.Error("readOnlyRootFilesystem: true (the daemon writes only pins, in bpffs)")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Error("capabilities: drop ALL, then add what is needed")
	} else if add := slices.Sorted(slices.Values(sc.Capabilities.Add)); !slices.Equal(add, slices.Sorted(slices.Values(wantCaps))) {
		t.Errorf("capabilities added: %v, want %v (deploy/kubernetes/daemonset.yaml says why)", add, wantCaps)
	}
	// docs/fleet.md's table says what each one is for.
	fleet := string(repoFile(t, "docs/fleet.md"))
	for _, c := range wantCaps {
		if !strings.Contains(fleet, "| `CAP_"+string(c)+"` |") {
			t.Errorf("docs/fleet.md's capability table does not explain CAP_%s", c)
		}
	}
	if sc.RunAsUser == nil || sc.RunAsGroup == nil {
		t.Error("runAsUser and runAsGroup: the image's USER, explicitly (Kubernetes grants added capabilities to uid 0 only)")
	}
}
