//go:build unix

package mkdwarfs

import (
	"testing"

	"github.com/godwarfs/godwarfs/metadata"
)

// checkFS runs the metadata consistency check when available.
func checkFS(t testing.TB, f *metadata.FS) {
	t.Helper()
	if c, ok := any(f).(interface{ Check() error }); ok {
		if err := c.Check(); err != nil {
			t.Fatalf("metadata check: %v", err)
		}
	}
}
