package fusefs

import (
	"reflect"
	"testing"

	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// TestZeroMountOptionsAreDriverDefaults checks that a mount without
// options (the zero MountOptions) behaves like dwarfs without -o.
func TestZeroMountOptionsAreDriverDefaults(t *testing.T) {
	got := MountOptions{}.withDefaults()
	want := driverOptions(mountopts.Defaults()).withDefaults()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("zero MountOptions give %+v, dwarfs defaults are %+v", got, want)
	}
	o := mountopts.Defaults()
	if err := o.ParseString("seq_detector=0,no_cache_files,tidy_strategy=swap"); err != nil {
		t.Fatal(err)
	}
	m := driverOptions(o).withDefaults()
	if m.SeqDetector != 0 || !m.NoCacheFiles || m.Tidy != TidySwap {
		t.Errorf("seq_detector=0,no_cache_files,tidy_strategy=swap gives %+v", m)
	}
}
