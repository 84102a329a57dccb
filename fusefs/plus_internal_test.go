//go:build linux && !386 && !arm

package fusefs

import (
	"syscall"
	"testing"
)

// TestPlusPolicy drives the READDIRPLUS policy by hand: lookups of
// directories or in other directories leave attributes off, a file looked
// up in the directory just listed turns them on for the rest of that
// listing and later ones, and a probe every plusProbe listings turns them
// off unless a file is looked up in it.
func TestPlusPolicy(t *testing.T) {
	var p plusPolicy
	if p.attrs(10, true) {
		t.Fatal("a fresh mount lists with attributes")
	}
	p.lookedUp(10, syscall.S_IFDIR|0o755)
	p.lookedUp(11, syscall.S_IFREG|0o644)
	if p.attrs(10, false) || p.attrs(12, true) {
		t.Fatal("lookups of a directory, or in another directory, turned attributes on")
	}
	p.lookedUp(12, syscall.S_IFLNK|0o777)
	if !p.attrs(12, false) {
		t.Fatal("a symlink looked up in the directory just listed left attributes off")
	}
	for i := 1; i < plusProbe; i++ {
		if !p.attrs(uint64(100+i), true) {
			t.Fatalf("listing %d after the switch is without attributes", i)
		}
	}
	if p.attrs(200, true) {
		t.Fatalf("listing %d is no probe", plusProbe)
	}
	if p.attrs(201, true) {
		t.Fatal("a probe nobody stat-ed in left attributes on")
	}
	p.lookedUp(201, syscall.S_IFREG|0o644)
	if !p.attrs(202, true) {
		t.Fatal("a file looked up in the probe left attributes off")
	}
}
