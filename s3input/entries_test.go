package s3input

import (
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/source/s3source"
)

func TestEntries(t *testing.T) {
	t1 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	t3 := t1.Add(2 * time.Hour)
	obj := func(key string, size int64, tm time.Time) s3source.Object {
		return s3source.Object{Key: key, Size: size, LastModified: tm, ETag: `"e"`}
	}
	type want struct {
		path  string
		dir   bool
		size  int64
		mtime time.Time
	}
	for _, tc := range []struct {
		name   string
		prefix string
		objs   []s3source.Object
		want   []want
		err    string
	}{
		{
			name:   "implied and explicit directories",
			prefix: "p/",
			objs: []s3source.Object{
				obj("p/", 0, t1),           // the prefix's own marker: the root's time
				obj("p/a-b", 3, t1),        // sorts before a/ in the listing
				obj("p/a/x/y", 5, t3),      // implies a and a/x
				obj("p/a/z", 0, t1),        // an empty file
				obj("p/empty/", 0, t2),     // an empty directory
				obj("p/explicit/", 0, t1),  // a marker older than its contents
				obj("p/explicit/f", 1, t3), // does not change the marker's time
				obj("p/deep/er/est/f", 2, t2),
			},
			want: []want{
				{"", true, 0, t1},
				{"a", true, 0, t3},
				{"a-b", false, 3, t1},
				{"a/x", true, 0, t3},
				{"a/x/y", false, 5, t3},
				{"a/z", false, 0, t1},
				{"deep", true, 0, t2},
				{"deep/er", true, 0, t2},
				{"deep/er/est", true, 0, t2},
				{"deep/er/est/f", false, 2, t2},
				{"empty", true, 0, t2},
				{"explicit", true, 0, t1},
				{"explicit/f", false, 1, t3},
			},
		},
		{
			name:   "whole bucket, root time from its contents",
			prefix: "",
			objs:   []s3source.Object{obj("f", 1, t2), obj("g", 1, t1)},
			want:   []want{{"", true, 0, t2}, {"f", false, 1, t2}, {"g", false, 1, t1}},
		},
		{
			name:   "file and directory",
			prefix: "p/",
			objs:   []s3source.Object{obj("p/a", 1, t1), obj("p/a/b", 1, t1)},
			err:    "a is both a file and a directory (s3://bkt/p/a, keys below it)",
		},
		{
			name:   "file and marker",
			prefix: "p/",
			objs:   []s3source.Object{obj("p/a", 1, t1), obj("p/a/", 0, t1)},
			err:    "a is both a file and a directory (s3://bkt/p/a, s3://bkt/p/a/)",
		},
		{name: "empty element", prefix: "p/", objs: []s3source.Object{obj("p/a//b", 1, t1)}, err: "s3://bkt/p/a//b: the key's path below the prefix has an empty, . or .. element"},
		{name: "dot dot", prefix: "p/", objs: []s3source.Object{obj("p/../b", 1, t1)}, err: "s3://bkt/p/../b: the key's path"},
		{name: "leading slash", prefix: "p/", objs: []s3source.Object{obj("p//b", 1, t1)}, err: "s3://bkt/p//b: the key's path"},
		{name: "dot", prefix: "", objs: []s3source.Object{obj("./b", 1, t1)}, err: "s3://bkt/./b: the key's path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Entries("bkt", tc.prefix, tc.objs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d entries, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Path != w.path || g.IsDir != w.dir || g.Size != w.size || !g.Mtime.Equal(w.mtime) {
					t.Errorf("entry %d: got %q dir=%v size=%d mtime=%v, want %q dir=%v size=%d mtime=%v",
						i, g.Path, g.IsDir, g.Size, g.Mtime, w.path, w.dir, w.size, w.mtime)
				}
			}
		})
	}
}

func TestSelectEntries(t *testing.T) {
	ents, err := Entries("bkt", "", []s3source.Object{
		{Key: "a/x", Size: 1}, {Key: "a/y/z", Size: 1}, {Key: "b/c", Size: 1}, {Key: "d", Size: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Dropping the directory a/y drops a/y/z; dropping the file d keeps
	// the rest.
	got := selectEntries(ents, func(e Entry) bool { return e.Path != "a/y" && e.Path != "d" })
	var paths []string
	for _, e := range got {
		paths = append(paths, e.Path)
	}
	if s := strings.Join(paths, ","); s != ",a,a/x,b,b/c" {
		t.Errorf("selected %q", s)
	}
}
