package manifest

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := "a\tdrwxr-xr-x 755 0 0 4096 1796203486.585708245 3\n" +
		"a/l\tlrwxrwxrwx 777 0 0 11 981173106.000000000 1 -> /etc/pass wd\n" +
		"d/c\tcrw-r--r-- 644 1 2 0 1796203487.000000000 1 rdev=1:3\n" +
		"f\t-rwsr-xr-x 4755 0 0 6 1.5 2 sha256=abc\n"
	es, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 4 || es[0].Type != 'd' || es[0].Nsec != 585708245 || es[1].Target != "/etc/pass wd" ||
		!es[2].HasRdev || es[2].Major != 1 || es[2].Minor != 3 || es[2].Gid != 2 || es[3].Perm != 0o4755 || es[3].SHA256 != "abc" || es[3].Nlink != 2 {
		t.Errorf("parsed %+v", es)
	}
	for _, bad := range []string{"nofields", "a\tx 7z9 0 0 0 0 1", "a\t- 644 0 0 0 0 1 what=1"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}
