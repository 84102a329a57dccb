//go:build linux && !386 && !arm

package apprun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/godwarfs/godwarfs"
)

// cacheBase is $XDG_CACHE_HOME/dwarfs-run, by default ~/.cache/dwarfs-run.
func cacheBase() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "dwarfs-run"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the extracted image: %w", err)
	}
	return filepath.Join(home, ".cache", "dwarfs-run"), nil
}

// cached returns the directory holding the extracted image, extracting
// it unless an earlier run did. The directory is named by the image's
// digest, so that a changed application gets a new one, and appears
// under that name only when complete: extraction goes to a temporary
// directory beside it, renamed at the end.
func cached(a *appFile, im *godwarfs.Image) (string, error) {
	bi, err := a.sections()
	if err != nil {
		return "", err
	}
	d, err := a.digest(bi)
	if err != nil {
		return "", err
	}
	base, err := cacheBase()
	if err != nil {
		return "", err
	}
	final := filepath.Join(base, d)
	if fi, err := os.Stat(final); err == nil && fi.IsDir() {
		return final, nil
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	tmp, err := os.MkdirTemp(base, "."+d+".tmp-")
	if err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	if err := extract(im, tmp, nil, nil); err != nil {
		removeTree(tmp)
		return "", fmt.Errorf("%s: extracting to %s: %w", a.name, base, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		removeTree(tmp)
		// Another run may have finished the same extraction first.
		if fi, serr := os.Stat(final); serr == nil && fi.IsDir() {
			return final, nil
		}
		return "", fmt.Errorf("cache directory: %w", err)
	}
	return final, nil
}

// removeTree removes dir, making its directories writable first (the
// extracted ones have the image's modes).
func removeTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		} else if errors.Is(err, fs.ErrPermission) {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
