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
		mc, err := Parse(tc.spec, 0o022)
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
		if _, err := Parse(bad, 0); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestApplyAsReference: modes the reference mkdwarfs 0.15.3 stores for
// these --chmod specs under two umasks (checked by building images of a
// tree with these modes and listing them).
func TestApplyAsReference(t *testing.T) {
	const (
		dir  = 0o040000
		file = 0o100000
	)
	for _, tc := range []struct {
		spec     string
		umask    uint32
		in, want uint32
	}{
		{"norm", 0o022, file | 0o600, file | 0o444},
		{"norm", 0o022, file | 0o750, file | 0o555},
		{"norm", 0o022, file | 0o1755, file | 0o555},
		{"norm", 0o022, file | 0o2711, file | 0o555},
		{"norm", 0o022, file | 0o4755, file | 0o555},
		{"norm", 0o022, dir | 0o2775, dir | 0o555},
		{"norm", 0o022, dir | 0o1777, dir | 0o555},
		{"norm", 0o077, file | 0o600, file | 0o400},
		{"norm", 0o077, file | 0o4755, file | 0o500},
		{"norm", 0o077, dir | 0o2775, dir | 0o500},
		{"=r", 0o022, file | 0o4755, file | 0o444},
		{"=r", 0o022, dir | 0o2775, dir | 0o2444},
		{"=r", 0o022, dir | 0o1777, dir | 0o444},
		{"=r", 0o077, dir | 0o2775, dir | 0o2400},
		{"755", 0o077, file | 0o2711, file | 0o755},
		{"755", 0o077, dir | 0o2775, dir | 0o2755},
		{"u=rwx", 0o022, file | 0o4755, file | 0o755},
		{"u=rwx", 0o022, file | 0o2711, file | 0o2711 | 0o700},
		{"u=rwx", 0o022, dir | 0o2775, dir | 0o2775},
		{"u=rwx", 0o022, dir | 0o1777, dir | 0o1777},
		{"go-w,+t", 0o022, file | 0o600, file | 0o1600},
		{"go-w,+t", 0o077, dir | 0o2775, dir | 0o3755},
	} {
		mc, err := Parse(tc.spec, tc.umask)
		if err != nil {
			t.Fatalf("%q: %v", tc.spec, err)
		}
		if got := mc.Apply(tc.in); got != tc.want {
			t.Errorf("%q (umask %03o) on %o: got %o, want %o", tc.spec, tc.umask, tc.in, got, tc.want)
		}
	}
}
