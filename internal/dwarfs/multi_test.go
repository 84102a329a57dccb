//go:build !windows && !(linux && (386 || arm))

package dwarfs

import (
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/mountopts"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		arg, name, image, err string
	}{
		{"a.dwarfs", "a", "a.dwarfs", ""},
		{"dir/v1.2.dwarfs", "v1.2", "dir/v1.2.dwarfs", ""},
		{"src:dir/v1.dwarfs", "src", "dir/v1.dwarfs", ""},
		{"img", "img", "img", ""},
		{"./a:b.dwarfs", "a:b", "./a:b.dwarfs", ""},
		{"n:a:b.dwarfs", "n", "a:b.dwarfs", ""},
		{"https://host/path/x.dwarfs?v=1", "x", "https://host/path/x.dwarfs?v=1", ""},
		{"s3://bucket/k/y.dwarfs", "y", "s3://bucket/k/y.dwarfs", ""},
		{"web:http://host/z.dwarfs", "web", "http://host/z.dwarfs", ""},
		{"s3:s3://b/k.dwarfs", "s3", "s3://b/k.dwarfs", ""},
		{"docker://127.0.0.1:5000/ns/app:v1", "app", "docker://127.0.0.1:5000/ns/app:v1", ""},
		{"old:docker://registry.example/app:v0", "old", "docker://registry.example/app:v0", ""},
		{"https://host/", "", "", "cannot name the image"},
		{".dwarfs", "", "", "cannot name the image"},
		{"x:", "", "", "names no image"},
		{"..:a.dwarfs", "", "", `image name ".." is not allowed`},
		{"./..", "", "", "cannot name the image"},
	} {
		s, err := parseSpec(c.arg)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseSpec(%q) = %+v, %v; want error %q", c.arg, s, err, c.err)
			}
		case err != nil || s.Name != c.name || s.Image != c.image:
			t.Errorf("parseSpec(%q) = %+v, %v; want %s:%s", c.arg, s, err, c.name, c.image)
		}
	}
}

func TestEscapeOption(t *testing.T) {
	for _, it := range []string{"cachesize=1g", `fsname=a,b\c`, "x=,,"} {
		if got := mountopts.Split(escapeOption(it)); len(got) != 1 || got[0] != it {
			t.Errorf("%q: escaped and split again: %q", it, got)
		}
	}
}

func TestDefaultNameRegistry(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"docker://127.0.0.1:5000/ns/app:v1", "app"},
		{"docker://registry.example/tools@sha256:" + strings.Repeat("a", 64), "tools"},
		{"https://h/x/b.dwarfs", "b"},
	} {
		if got := defaultName(c.in); got != c.want {
			t.Errorf("defaultName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
