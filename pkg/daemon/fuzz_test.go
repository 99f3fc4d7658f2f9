package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParseConfig: the parser never panics; what it accepts is valid, can
// be written back and reads the same; what it refuses comes with at least
// one problem to show. Seeds: testdata/fuzz/FuzzParseConfig (run as unit
// tests by `go test`) plus the examples in testdata/config.
func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/config/*.yaml")
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 || err.Error() == "" {
				t.Fatalf("error without problems: %T %v", err, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted but invalid: %v", err)
		}
		r := c.Resolve()
		if err := r.Validate(); err != nil {
			t.Fatalf("valid config resolves to an invalid one: %v\n%+v", err, r)
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		c2, err := ParseConfig(out)
		if err != nil {
			t.Fatalf("re-parsing what was accepted:\n%s\n%v", out, err)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip changed the config:\n%#v\n%#v", c, c2)
		}
	})
}
