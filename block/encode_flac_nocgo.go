//go:build !cgo || purego

package block

const nativeFLAC = false

func encodeFLACNative(hdr []byte, samples []int32, l PCMLayout, level int, exhaustive bool) ([]byte, error) {
	return encodeFLACGo(hdr, samples, l, level, exhaustive)
}

func flacEncoderName() string { return "" }
