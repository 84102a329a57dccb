//go:build !windows && !(linux && (386 || arm))

package dwarfs_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godwarfs/godwarfs/internal/dwarfs"
	"github.com/godwarfs/godwarfs/internal/fixtures"
	"github.com/godwarfs/godwarfs/internal/mountopts"
)

// TestOpenImageOptions checks offset, imagesize, cache_image and
// preloading without mounting.
func TestOpenImageOptions(t *testing.T) {
	img := fixtures.File(t, "reference", "images", "lookback-4.dwarfs")
	raw, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	prefix := bytes.Repeat([]byte("#!/bin/sh\nexit 0\n"), 100)
	dir := t.TempDir()
	padded := filepath.Join(dir, "padded.dwarfs")
	if err := os.WriteFile(padded, append(append([]byte(nil), prefix...), raw...), 0o644); err != nil {
		t.Fatal(err)
	}
	// Trailing junk only works if imagesize cuts it off.
	junk := filepath.Join(dir, "junk.dwarfs")
	data := append(append(append([]byte(nil), prefix...), raw...), bytes.Repeat([]byte{0xAA}, 4096)...)
	if err := os.WriteFile(junk, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, opts string }{
		{padded, "offset=auto"},
		{padded, "offset=" + itoa(len(prefix))},
		{junk, "offset=" + itoa(len(prefix)) + ",imagesize=" + itoa(len(raw))},
		{junk, "cache_image,offset=" + itoa(len(prefix)) + ",imagesize=" + itoa(len(raw))},
		{padded, "cache_image"},
		{padded, "preload_all,cachesize=2m"},
	} {
		opts := c.opts
		t.Run(opts, func(t *testing.T) {
			o := mountopts.Defaults()
			if err := o.ParseString(opts); err != nil {
				t.Fatal(err)
			}
			src, closer, err := dwarfs.OpenImage(c.file, o)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			ino, ok := src.Lookup(src.Root(), "data")
			if !ok {
				t.Fatal("no /data")
			}
			ino, ok = src.Lookup(ino, "random.bin")
			if !ok {
				t.Fatal("no /data/random.bin")
			}
			a, err := src.Stat(ino)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, a.Size)
			f, err := src.Open(ino)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := f.ReadAt(context.Background(), buf, 0); int64(n) != a.Size {
				t.Fatalf("read %d of %d: %v", n, a.Size, err)
			}
			if o.PreloadAll {
				for start := time.Now(); src.CacheStats().Decoded < 2; {
					if time.Since(start) > 5*time.Second {
						t.Fatalf("preload_all decoded nothing: %+v", src.CacheStats())
					}
					time.Sleep(5 * time.Millisecond)
				}
				if st := src.CacheStats(); st.PeakBytes > st.Capacity {
					t.Errorf("preload overfilled the cache: %+v", st)
				}
			}
		})
	}
	o := mountopts.Defaults()
	o.ImageOffset = 7
	if _, _, err := dwarfs.OpenImage(padded, o); err == nil {
		t.Error("wrong offset accepted")
	}
}

// TestPreloadCategory: a category the image has is preloaded; one it
// does not have fails the mount with an error that names it and lists
// the categories there are.
func TestPreloadCategory(t *testing.T) {
	cat := fixtures.File(t, "reference", "images", "categorize.dwarfs")
	plain := fixtures.File(t, "reference", "images", "lookback-4.dwarfs")
	o := mountopts.Defaults()
	if err := o.ParseString("preload_category=binary/elf"); err != nil {
		t.Fatal(err)
	}
	src, closer, err := dwarfs.OpenImage(cat, o)
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); src.CacheStats().Decoded < 1; {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("preload_category=binary/elf decoded nothing: %+v", src.CacheStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	closer.Close()

	for _, c := range []struct{ img, opts, want string }{
		{cat, "preload_category=hotness", `no category "hotness" in the image (known categories: <default>, binary/elf, incompressible)`},
		{cat, "preload_category=binary/elf,preload_category=pcmaudio", `no category "pcmaudio"`},
		{plain, "preload_category=<default>", `no category "<default>" in the image (the image has no categories)`},
	} {
		o := mountopts.Defaults()
		if err := o.ParseString(c.opts); err != nil {
			t.Fatal(err)
		}
		_, _, err := dwarfs.OpenImage(c.img, o)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.img) {
			t.Errorf("%s on %s: %v, want an error naming the image and %s", c.opts, filepath.Base(c.img), err, c.want)
		}
	}
}

func itoa(n int) string { return fmtInt(int64(n)) }

func fmtInt(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
