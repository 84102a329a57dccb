//go:build linux && !386 && !arm

package fusefs_test

import (
	"runtime"
	"testing"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// SpareProcs leaves Ps beyond the readers blocked on the FUSE device,
// unless the user chose GOMAXPROCS. The test restores the setting.
func TestSpareProcs(t *testing.T) {
	requireFuse(t)
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	tests := []struct {
		env  string
		want int
	}{
		{"", before + 2},
		{"1", before}, // the variable is read at start; a set one wins
	}
	for _, tc := range tests {
		runtime.GOMAXPROCS(before)
		t.Setenv("GOMAXPROCS", tc.env)
		m, _ := sampleSource()
		srv, err := fusefs.Mount(t.TempDir(), m, fusefs.Config{Options: mountopts.Defaults().MountOptions, SpareProcs: true})
		if err != nil {
			t.Fatalf("mount: %v", err)
		}
		got := runtime.GOMAXPROCS(0)
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
		if got != tc.want {
			t.Errorf("GOMAXPROCS=%q: %d Ps after mounting, want %d", tc.env, got, tc.want)
		}
	}
}
