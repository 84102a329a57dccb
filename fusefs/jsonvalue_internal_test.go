//go:build !windows && !(linux && (386 || arm))

package fusefs

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/godwarfs/godwarfs/source"
)

// TestInodeInfoJSON holds the hand-written inodeinfo value to what
// encoding/json makes of the same struct.
func TestInodeInfoJSON(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	for _, info := range []inodeInfo{
		{},
		{Inode: 7, Mode: 0o40755, ModeString: "drwxr-xr-x", UID: 1000, GID: 100, Nlink: 3, Size: 2},
		{Inode: 1<<32 - 1, Mode: 0o100644, ModeString: "-rw-r--r--", Nlink: 1, Size: 1 << 40, Allocated: 1<<40 - 4096,
			Chunks: []chunkInfo{{Block: u(0), Offset: u(0), Size: 4096}, {Size: 1 << 33, Hole: true}, {Block: u(1<<32 - 1), Offset: u(12), Size: 1}}},
		{ModeString: "a\"b\\c\n\r\t\x01<>&é", Size: -1, Allocated: -5},
	} {
		want, err := json.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.appendJSON(nil); string(got) != string(want) {
			t.Errorf("inodeinfo %+v:\n got %s\nwant %s", info, got, want)
		}
	}
}

// TestStatsJSON holds the hand-written remote counters to what
// encoding/json makes of source.Stats, every field set to its own value,
// so that a field added to Stats and not here fails it.
func TestStatsJSON(t *testing.T) {
	var st source.Stats
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i+1) * 1000003)
	}
	want, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if got := statsJSON(st); string(got) != string(want) {
		t.Errorf("remote stats:\n got %s\nwant %s", got, want)
	}
}
