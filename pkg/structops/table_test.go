// SPDX-License-Identifier: Apache-2.0

package structops_test

import (
	"slices"
	"sort"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/mptcp-cc/mptcp-cc/pkg/algo"
	"github.com/mptcp-cc/mptcp-cc/pkg/cc"
	"github.com/mptcp-cc/mptcp-cc/pkg/sched"
	"github.com/mptcp-cc/mptcp-cc/pkg/structops"
)

// Every algorithm of the table has an object in pkg/cc or pkg/sched and
// every object there has an entry in the table (its model's registration
// in pkg/model or pkg/schedmodel), and each object is given its table id
// at load time.
func TestObjectsAreTheTable(t *testing.T) {
	checkTable(t, algo.CC, "pkg/cc/gen.go and pkg/model/NAME.go", cc.Objects,
		func(i algo.Info) (*ebpf.CollectionSpec, error) { return cc.Algorithm{Info: i}.Spec() })
	checkTable(t, algo.Scheduler, "pkg/sched/gen.go and pkg/schedmodel/NAME.go", sched.Objects,
		func(i algo.Info) (*ebpf.CollectionSpec, error) { return sched.Algorithm{Info: i}.Spec() })
}

func checkTable(t *testing.T, kind algo.Kind, where string, objects func() ([]string, error), spec func(algo.Info) (*ebpf.CollectionSpec, error)) {
	t.Helper()
	objs, err := objects()
	if err != nil {
		t.Fatal(err)
	}
	names := algo.Names(kind)
	sort.Strings(names)
	if len(names) == 0 || !slices.Equal(objs, names) {
		t.Errorf("%s: objects %v, table %v: an algorithm needs both its go:generate line and its model's registration (%s)", kind, objs, names, where)
	}
	for _, a := range algo.All(kind) {
		s, err := spec(a)
		if err != nil {
			t.Errorf("%s: %v", a.Name, err)
			continue
		}
		var id uint32
		if err := s.Variables[structops.IDVars[kind]].Get(&id); err != nil || id != a.ID {
			t.Errorf("%s: the object's %s is %d (%v), want the table's %d", a.Name, structops.IDVars[kind], id, err, a.ID)
		}
	}
}
