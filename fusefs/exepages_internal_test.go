//go:build linux && !386 && !arm

package fusefs

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestReadOnlyMappings(t *testing.T) {
	const smaps = `00400000-009aa000 r-xp 00000000 fd:01 123 /usr/bin/dw arfs
Size:               5800 kB
Rss:                4984 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
009aa000-00fbf000 r--p 005aa000 fd:01 123 /usr/bin/dw arfs
Rss:                4200 kB
Anonymous:             0 kB
00fbf000-01044000 rw-p 00bbf000 fd:01 123 /usr/bin/dw arfs
Anonymous:           120 kB
01044000-01050000 r--p 00c44000 fd:01 123 /usr/bin/dw arfs
Anonymous:            12 kB
01050000-01060000 r-xp 00000000 fd:01 456 /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
Anonymous:             4 kB
`
	for _, tc := range []struct {
		path string
		want [][2]uintptr
	}{
		{"/usr/bin/dw arfs", [][2]uintptr{{0x400000, 0x9aa000}, {0x9aa000, 0xfbf000}}},
		{"/usr/lib/libc.so.6", [][2]uintptr{{0x1050000, 0x1060000}}},
		{"/usr/bin/other", nil},
	} {
		if got := readOnlyMappings([]byte(smaps), tc.path); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("readOnlyMappings(%q) = %#x, want %#x", tc.path, got, tc.want)
		}
	}
}

// Dropping takes the code pages out of the resident set, and the code
// keeps running from the page cache.
func TestDropExecutablePages(t *testing.T) {
	before := exeRss(t)
	if err := dropExecutablePages(); err != nil {
		t.Fatal(err)
	}
	if after := exeRss(t); after >= before {
		t.Fatalf("resident code and read-only data: %d kB before dropping, %d kB after", before, after)
	}
}

// exeRss returns the kB of the executable's read-only mappings that are
// resident.
func exeRss(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	total, in := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[0], "-") {
			in = strings.Join(f[5:], " ") == exe && (f[1] == "r-xp" || f[1] == "r--p")
		} else if in && len(f) >= 2 && f[0] == "Rss:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
	}
	if total == 0 {
		t.Fatalf("no resident read-only mapping of %s in /proc/self/smaps", exe)
	}
	return total
}
