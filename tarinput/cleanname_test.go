package tarinput

import (
	"strings"
	"testing"
	"unsafe"
)

// splitClean is cleanName's rule written the long way: split on "/",
// drop empty and "." components, refuse "..", join the rest.
func splitClean(name string) (string, bool) {
	var out []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return "", false
		}
		out = append(out, p)
	}
	return strings.Join(out, "/"), true
}

func TestCleanName(t *testing.T) {
	for _, c := range []struct {
		in, want string
		bad      bool
	}{
		{in: "a/b", want: "a/b"},
		{in: "./a/b", want: "a/b"},
		{in: "/a/b/", want: "a/b"},
		{in: "//./a//b/.", want: "a/b"},
		{in: "a/./b", want: "a/b"},
		{in: ".", want: ""},
		{in: "./", want: ""},
		{in: "/", want: ""},
		{in: "", want: ""},
		{in: ".a/..b/c.", want: ".a/..b/c."},
		{in: "a/../b", bad: true},
		{in: "../a", bad: true},
		{in: "a/..", bad: true},
	} {
		r := &reader{src: &Source{name: "in.tar"}}
		got, err := r.cleanName(c.in, 0)
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), "name contains '..'") {
				t.Errorf("cleanName(%q) = %q, %v; want the '..' error", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("cleanName(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzCleanName: the shortcut for names that are already clean gives what
// the long way gives, as a substring of the member name.
func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"a/b", "./a", "/x/y/", "a//b", "a/./b", "..", ".../a", "./."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		want, wok := splitClean(name)
		got, ok := alreadyClean(name)
		if !ok {
			return
		}
		if !wok || got != want {
			t.Fatalf("alreadyClean(%q) = %q; the long way gives %q (ok %v)", name, got, want, wok)
		}
		if got != "" && !within(got, name) {
			t.Fatalf("alreadyClean(%q) = %q is not a substring of the name", name, got)
		}
	})
}

// within tells whether s lies in the memory of name.
func within(s, name string) bool {
	b, n := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(name)))
	return b >= n && b+uintptr(len(s)) <= n+uintptr(len(name))
}
