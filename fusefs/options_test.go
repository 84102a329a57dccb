//go:build linux && !386 && !arm

package fusefs

import (
	"reflect"
	"testing"
)

// TestZeroMountOptions checks what the zero MountOptions mean.
func TestZeroMountOptions(t *testing.T) {
	got := MountOptions{}.withDefaults()
	want := MountOptions{BlockSize: DefaultBlockSize, SeqDetector: DefaultSeqDetector, TidyInterval: DefaultTidyInterval, TidyMaxAge: DefaultTidyMaxAge}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("zero MountOptions give %+v, want %+v", got, want)
	}
	if off := (MountOptions{SeqDetector: -1}).withDefaults(); off.SeqDetector != 0 {
		t.Errorf("negative SeqDetector gives %d, want 0 (disabled)", off.SeqDetector)
	}
}
