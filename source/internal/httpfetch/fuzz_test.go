package httpfetch

import (
	"fmt"
	"testing"
)

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-0/1", "bytes 5-9/10", "bytes 0-99/*", "bytes */10", "bytes 9-5/10", "bytes -1-2/3", "bits 0-1/2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, e, total, err := ParseContentRange(v)
		if err != nil {
			return
		}
		if s < 0 || e < s || (total != -1 && total <= e) {
			t.Fatalf("%q parsed to %d-%d/%d", v, s, e, total)
		}
		// What parses must print back to an equivalent header.
		want := fmt.Sprintf("bytes %d-%d/%d", s, e, total)
		if total == -1 {
			want = fmt.Sprintf("bytes %d-%d/*", s, e)
		}
		s2, e2, t2, err := ParseContentRange(want)
		if err != nil || s2 != s || e2 != e || t2 != total {
			t.Fatalf("%q -> %q does not round-trip", v, want)
		}
	})
}
