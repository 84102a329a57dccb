//go:build !windows && !(linux && (386 || arm))

package dwarfs

import (
	"path/filepath"
	"testing"
)

func TestParseArgs(t *testing.T) {
	a, err := ParseArgs([]string{"dwarfs", "img", "-o", "cachesize=1m", "mnt", "-f", "-ouid=5"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Image != "img" || a.MountPoint != "mnt" || !a.Foreground || a.Fake || a.Options.CacheSize != 1<<20 || a.Options.UID == nil || *a.Options.UID != 5 {
		t.Errorf("%+v", a)
	}
	a, err = ParseArgs([]string{"/sbin/mount.fuse.dwarfs", "dwarfs#img", "mnt", "-nv", "-o", "rw,noauto,user,_netdev,defaults,nodev"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Image != "img" || a.Foreground || a.Fake || !a.helper {
		t.Errorf("helper: %+v", a)
	}
	a, err = ParseArgs([]string{"mount.dwarfs", "img", "mnt", "-f"})
	if err != nil || !a.Fake {
		t.Errorf("helper -f is fake: %+v %v", a, err)
	}
	a, err = ParseArgs([]string{"dwarfs", "img", "mnt", "-d"})
	if err != nil || !a.Debug || !a.Foreground {
		t.Errorf("-d: %+v %v", a, err)
	}
	for _, bad := range [][]string{
		{"dwarfs"},
		{"dwarfs", "img"},
		{"dwarfs", "img", "mnt", "extra"},
		{"dwarfs", "img", "mnt", "-x"},
		{"dwarfs", "img", "mnt", "--frob"},
		{"dwarfs", "img", "mnt", "-o"},
		{"dwarfs", "img", "mnt", "-o", "nope"},
	} {
		if _, err := ParseArgs(bad); err == nil || !IsUsageError(err) {
			t.Errorf("%q: %v, want usage error", bad, err)
		}
	}
}

// TestParseArgsSignature: signature= and verify= paths are made absolute
// (the daemon leaves the directory it started in), a URL is kept as given.
func TestParseArgsSignature(t *testing.T) {
	for _, tc := range []struct{ sig, want string }{
		{"https://h/img.dwarfs.sig?x=1", "https://h/img.dwarfs.sig?x=1"},
		{"s3://b/k.sig", "s3://b/k.sig"},
		{"/abs/img.sig", "/abs/img.sig"},
	} {
		a, err := ParseArgs([]string{"dwarfs", "img", "mnt", "-o", "verify=/a/allowed,signature=" + tc.sig})
		if err != nil {
			t.Fatal(err)
		}
		if a.Options.Signature != tc.want {
			t.Errorf("signature=%s became %q", tc.sig, a.Options.Signature)
		}
	}
	a, err := ParseArgs([]string{"dwarfs", "img", "mnt", "-o", "verify=allowed,signature=img.sig"})
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(a.Options.Signature) || !filepath.IsAbs(a.Options.Verify) {
		t.Errorf("relative paths kept: %q %q", a.Options.Verify, a.Options.Signature)
	}
}
