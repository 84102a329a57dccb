//go:build !cgo || !libflac || purego

package encode

import "github.com/godwarfs/godwarfs/block"

const nativeFLAC = false

func encodeFLACNative(hdr []byte, samples []int32, l block.PCMLayout, level int, exhaustive bool) ([]byte, error) {
	return encodeFLACGo(hdr, samples, l, level, exhaustive)
}

func flacEncoderName() string { return "" }
