//go:build !windows && !(linux && (386 || arm))

package dwarfs

import (
	"reflect"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/fusefs"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// TestDriverDefaults checks that dwarfs without -o mounts with the
// defaults of fusefs.MountOptions, and that the -o spellings of "off" map
// to the fields that say so.
func TestDriverDefaults(t *testing.T) {
	got := DriverOptions(mountopts.Defaults())
	want := fusefs.MountOptions{
		BlockSize: fusefs.DefaultBlockSize, SeqDetector: fusefs.DefaultSeqDetector,
		TidyInterval: fusefs.DefaultTidyInterval, TidyMaxAge: fusefs.DefaultTidyMaxAge,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dwarfs defaults give %+v, want %+v", got, want)
	}
	o := mountopts.Defaults()
	if err := o.ParseString("seq_detector=0,no_cache_files,tidy_strategy=swap,tidy_interval=1s"); err != nil {
		t.Fatal(err)
	}
	m := DriverOptions(o)
	if m.SeqDetector >= 0 || !m.NoCacheFiles || m.Tidy != fusefs.TidySwap || m.TidyInterval != time.Second {
		t.Errorf("seq_detector=0,no_cache_files,tidy_strategy=swap,tidy_interval=1s gives %+v", m)
	}
}
