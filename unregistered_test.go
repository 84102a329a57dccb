package godwarfs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs"
	"github.com/godwarfs/godwarfs/source"
)

// TestOpenUnregisteredScheme: this package's tests import no remote
// backend, so a URL of each kind fails at once with an error that names
// the package to import, instead of a request or a missing local file.
func TestOpenUnregisteredScheme(t *testing.T) {
	const all = "github.com/godwarfs/godwarfs/source/remote"
	for _, tc := range []struct{ name, shown, pkg string }{
		{"s3://bucket/key.dwarfs", "s3://bucket/key.dwarfs", "github.com/godwarfs/godwarfs/source/s3source"},
		{"https://user:secret@example.com/a.dwarfs", "https://REDACTED@example.com/a.dwarfs", "github.com/godwarfs/godwarfs/source/httpsource"},
		{"HTTP://example.com/a.dwarfs", "http://example.com/a.dwarfs", "github.com/godwarfs/godwarfs/source/httpsource"},
		{"docker://127.0.0.1:5000/images/app:v1", "docker://127.0.0.1:5000/images/app:v1", "github.com/godwarfs/godwarfs/source/registrysource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, err := godwarfs.Open(tc.name, nil)
			if err == nil {
				im.Close()
				t.Fatal("opened without a registered backend")
			}
			if !errors.Is(err, source.ErrNotRegistered) {
				t.Errorf("error %v does not wrap ErrNotRegistered", err)
			}
			scheme := strings.ToLower(tc.name[:strings.Index(tc.name, "://")])
			want := tc.shown + ": " + scheme + ":// images need package " + tc.pkg + " imported (or " + all + " for every kind)"
			if err.Error() != want {
				t.Errorf("error\n%q, want\n%q", err, want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}
