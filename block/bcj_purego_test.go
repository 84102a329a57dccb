//go:build !cgo || purego

package block

func forcedBCJ([]byte, *bcjFilter) ([]byte, error) { return nil, errNoNative }
