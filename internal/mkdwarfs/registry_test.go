package mkdwarfs

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/cli"
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
		code := Main(context.Background(), append([]string{"mkdwarfs"}, c.args...), cli.Stdio{Out: &bytes.Buffer{}, Err: &stderr})
		if code == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d: %s", c.args, code, stderr.String())
		}
	}
}
