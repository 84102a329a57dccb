package mkdwarfs

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRegistryOutputUsage: a registry output is checked before anything
// is built.
func TestRegistryOutputUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-i", dir, "-o", "docker://Not A Reference"}, "docker://Not A Reference"},
	} {
		var stderr bytes.Buffer
		code := Main(context.Background(), c.args, nil, &bytes.Buffer{}, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d: %s", c.args, code, stderr.String())
		}
	}
}
