// SPDX-License-Identifier: Apache-2.0

package algo

import (
	"slices"
	"strings"
	"testing"
)

// withTable runs f on an empty table and puts the real one back.
func withTable(t *testing.T) {
	t.Helper()
	mu.Lock()
	saved := table
	table = map[Kind][]Info{}
	mu.Unlock()
	t.Cleanup(func() { mu.Lock(); table = saved; mu.Unlock() })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}

func TestRegister(t *testing.T) {
	withTable(t)
	m := func() {}
	Register(Info{Name: "b", Kind: CC, ID: 2, Model: m, Params: []string{"x"}})
	Register(Info{Name: "a", Kind: CC, ID: 1, Model: m})
	Register(Info{Name: "a", Kind: Scheduler, ID: 1, Model: m}) // another kind: no collision

	if got := Names(CC); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names(CC) = %v, want id order [a b]", got)
	}
	if got := Names(Scheduler); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Names(Scheduler) = %v", got)
	}
	if i, ok := ByID(CC, 2); !ok || i.Name != "b" || !i.Reads("x") || i.Reads("y") {
		t.Errorf("ByID(CC, 2) = %+v, %v", i, ok)
	}
	if got := Readers(CC, "x"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Readers(CC, x) = %v, want [b]", got)
	}
	if _, ok := ByID(CC, 3); ok {
		t.Error("ByID(CC, 3) found one")
	}
	if i, err := Lookup(CC, "a"); err != nil || i.ID != 1 {
		t.Errorf("Lookup(CC, a) = %+v, %v", i, err)
	}
	if _, err := Lookup(CC, "c"); err == nil || err.Error() != `unknown algorithm "c": choose one of a, b` {
		t.Errorf("Lookup(CC, c): %v", err)
	}
	if _, err := Lookup(Scheduler, "c"); err == nil || !strings.Contains(err.Error(), `unknown scheduler "c": choose one of a`) {
		t.Errorf("Lookup(Scheduler, c): %v", err)
	}

	mustPanic(t, "same name", func() { Register(Info{Name: "a", Kind: CC, ID: 9, Model: m}) })
	mustPanic(t, "same id", func() { Register(Info{Name: "c", Kind: CC, ID: 1, Model: m}) })
	mustPanic(t, "no name", func() { Register(Info{Kind: CC, ID: 9, Model: m}) })
	mustPanic(t, "id 0", func() { Register(Info{Name: "c", Kind: CC, Model: m}) })
	mustPanic(t, "id over a byte", func() { Register(Info{Name: "c", Kind: CC, ID: MaxID + 1, Model: m}) })
	mustPanic(t, "no model", func() { Register(Info{Name: "c", Kind: CC, ID: 9}) })
	if n := len(All(CC)); n != 2 {
		t.Errorf("a refused registration changed the table: %d entries", n)
	}
}
