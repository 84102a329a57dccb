package chmod

import "testing"

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		spec     string
		in, want uint32
	}{
		{"a+r", 0o100600, 0o100644},
		{"u-w", 0o100644, 0o100444},
		{"go-w", 0o100666, 0o100644},
		{"a+X", 0o100644, 0o100644},
		{"a+X", 0o40700, 0o40711},
		{"a+X", 0o100744, 0o100755},
		{"Fa-x,Du+w", 0o100755, 0o100644},
		{"Fa-x,Du+w", 0o40555, 0o40755},
		{"755", 0o100600, 0o100755},
		{"u=rw,go=r", 0o104777, 0o100644},
		{"u+s", 0o100755, 0o104755},
		{"o=u", 0o100750, 0o100757},
		{"Fa-x", 0o100755, 0o100644},
		{"Fa-x", 0o040755, 0o040755},
		{"D755", 0o040700, 0o040755},
		{"go=", 0o100777, 0o100700},
		{"a+X", 0o040600, 0o040711},
		{"644", 0o100777, 0o100644},
	} {
		mc, err := Parse(tc.spec)
		if err != nil {
			t.Fatalf("%q: %v", tc.spec, err)
		}
		if got := mc.Apply(tc.in); got != tc.want {
			t.Errorf("%q on %o: got %o, want %o", tc.spec, tc.in, got, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, bad := range []string{"", "a", "u*r", "9", "a+r,", "u+q", "99999"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
