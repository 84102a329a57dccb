package mountopts

import (
	"reflect"
	"testing"
)

// FuzzParseString: mount option strings come from fstab and the command
// line; parsing never panics and gives the same result every time.
func FuzzParseString(f *testing.F) {
	for _, s := range []string{"cachesize=512m,workers=4", "ro,allow_other", "offset=auto", "tidy_strategy=time,tidy_interval=1s", "a\\,b=c", "=,,=", "cachesize=1x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, b := Defaults(), Defaults()
		errA, errB := a.ParseString(s), b.ParseString(s)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Fatalf("%q parsed differently twice: %v / %v", s, errA, errB)
		}
	})
}
