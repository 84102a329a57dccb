//go:build !cgo || !liblzma || purego

package encode

import "github.com/godwarfs/godwarfs/block/internal/xzfmt"

func forcedBCJ([]byte, *xzfmt.Filter) ([]byte, error) { return nil, errNoNative }
