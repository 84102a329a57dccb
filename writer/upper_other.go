//go:build !linux

package writer

import (
	"context"
	"fmt"

	"github.com/godwarfs/godwarfs/dedup"
)

// upperTree needs Linux: overlayfs upper directories are Linux's.
type upperTree struct {
	dir   string
	image *baseImage
	warn  func(format string, args ...any)
}

func (t *upperTree) ReadTree(context.Context, func(int64), func(string, ...any)) (*dedup.TreeNode, error) {
	return nil, fmt.Errorf("upper %s: applying an overlayfs upper directory needs Linux: %w", t.dir, ErrUpper)
}

func (t *upperTree) verify() error { return nil }

func (t *upperTree) close() {}
