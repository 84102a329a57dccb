package dedup

import (
	"errors"
	"testing"
	"time"
)

func TestParseTimeResolution(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"sec": time.Second, "min": time.Minute, "hour": time.Hour, "day": 24 * time.Hour,
		"ms": time.Millisecond, "msec": time.Millisecond, "us": time.Microsecond, "usec": time.Microsecond,
		"ns": 1, "nsec": 1, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour,
		"10ms": 10 * time.Millisecond, "60": time.Minute, "120s": 2 * time.Minute, "2m": 2 * time.Minute,
		"1h": time.Hour, "3s": 3 * time.Second, "1s": time.Second,
	} {
		if got, err := ParseTimeResolution(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":     `invalid time resolution "": invalid option`,
		"0":    `invalid time resolution "0": invalid option`,
		"x":    `invalid time resolution "x": invalid option`,
		"-1s":  `invalid time resolution "-1s": invalid option`,
		"1y":   `invalid time resolution "1y": invalid option`,
		"7ms":  `time resolution "7ms": 7ms must divide one second: invalid option`,
		"90ms": `time resolution "90ms": 90ms must divide one second: invalid option`,
	} {
		_, err := ParseTimeResolution(in)
		if err == nil || err.Error() != want || !errors.Is(err, ErrPolicy) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

func TestParsePack(t *testing.T) {
	for in, want := range map[string]Pack{
		"auto":                     PackAuto,
		"none":                     {},
		"all":                      {ChunkTable: true, Directories: true, SharedFiles: true, Names: true, NamesIndex: true, Symlinks: true, SymlinksIndex: true},
		"plain,all":                {ChunkTable: true, Directories: true, SharedFiles: true, Names: true, NamesIndex: true, Symlinks: true, SymlinksIndex: true, Plain: true},
		"all,none,force":           {Force: true},
		"chunk_table, names_index": {ChunkTable: true, NamesIndex: true},
	} {
		if got, err := ParsePack(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	if _, err := ParsePack("names,bogus"); err == nil || err.Error() != `invalid --pack-metadata element "bogus": invalid option` {
		t.Errorf("bogus element: %v", err)
	}
}

func TestParseChmod(t *testing.T) {
	f, err := ParseChmod("Fa-w,Dg+w", 0o022)
	if err != nil {
		t.Fatal(err)
	}
	if got := f(0o100644); got != 0o100444 {
		t.Errorf("file 0644 -> %o, want 0444", got&0o7777)
	}
	if got := f(0o040755); got != 0o040775 {
		t.Errorf("dir 0755 -> %o, want 0775", got&0o7777)
	}
	if _, err := ParseChmod("q+w", 0); !errors.Is(err, ErrPolicy) {
		t.Errorf("bad spec: %v", err)
	}
}
