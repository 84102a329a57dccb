package brotli_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	upstream "github.com/andybalholm/brotli"

	"github.com/godwarfs/godwarfs/internal/brotli"
)

// encode compresses data with the upstream encoder, the one godwarfs writes
// images with.
func encode(t testing.TB, data []byte, quality, lgwin int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := upstream.NewWriterOptions(&buf, upstream.WriterOptions{Quality: quality, LGWin: lgwin})
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// inputs covers the decoder's paths: the static dictionary and context
// modelling (text), uncompressed meta-blocks (random), long distances
// (a random chunk repeated further apart than small windows reach) and
// the empty stream.
func inputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var text bytes.Buffer
	words := []string{"the", "archive", "filesystem", "block", "section", "inode", "directory", "compressed", "metadata", "chunk"}
	for text.Len() < 400<<10 {
		fmt.Fprintf(&text, "%s %d, ", words[rng.IntN(len(words))], rng.IntN(1000))
	}
	chunk := random[:64<<10]
	far := append(append(append([]byte{}, chunk...), random[100<<10:300<<10]...), chunk...)
	return map[string][]byte{
		"empty":  nil,
		"byte":   {'x'},
		"text":   text.Bytes(),
		"random": random,
		"far":    far,
		"zeros":  make([]byte, 1<<20),
	}
}

func TestDecodeUpstreamStreams(t *testing.T) {
	for name, all := range inputs() {
		for _, quality := range []int{0, 1, 4, 5, 9, 10, 11} {
			for _, lgwin := range []int{10, 16, 22, 24} {
				data := all
				if quality >= 10 && len(data) > 128<<10 {
					// Quality 10 and 11 take seconds per MiB; a slice
					// exercises the same encoder paths.
					data = data[:128<<10]
				}
				t.Run(fmt.Sprintf("%s/q%d/w%d", name, quality, lgwin), func(t *testing.T) {
					enc := encode(t, data, quality, lgwin)
					got, err := io.ReadAll(brotli.NewReader(bytes.NewReader(enc)))
					if err != nil {
						t.Fatalf("decode %d bytes: %v", len(enc), err)
					}
					if !bytes.Equal(got, data) {
						t.Fatalf("decoded %d bytes, want %d (or same length, different bytes)", len(got), len(data))
					}
				})
			}
		}
	}
}

// oneByteReader hands the decoder its input one byte per Read, the worst
// case for its resumable state machine.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func TestDecodeResumes(t *testing.T) {
	data := inputs()["text"][:64<<10]
	enc := encode(t, data, 6, 18)
	r := brotli.NewReader(oneByteReader{bytes.NewReader(enc)})
	// A small output buffer makes the decoder stop mid-meta-block too.
	var got bytes.Buffer
	buf := make([]byte, 7)
	for {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", got.Len(), err)
		}
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("decoded %d bytes, want %d", got.Len(), len(data))
	}

	// Reset reuses the reader for another stream.
	other := []byte("a second stream")
	if err := r.Reset(bytes.NewReader(encode(t, other, 1, 0))); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, other) {
		t.Fatalf("after Reset: %q, %v", got, err)
	}
}

func TestDecodeRejectsBadStreams(t *testing.T) {
	enc := encode(t, inputs()["text"][:32<<10], 5, 16)
	flipped := bytes.Clone(enc)
	flipped[len(flipped)/2] ^= 0xff
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"no input", nil},
		{"truncated", enc[:len(enc)/2]},
		{"last byte missing", enc[:len(enc)-1]},
		{"trailing data", append(bytes.Clone(enc), 0)},
		{"bit flip", flipped},
		// A large-window header, which an ordinary reader refuses (and
		// whose window size is invalid even for one that accepts them).
		{"invalid window", []byte{0x11, 0x09}},
		{"all ones", bytes.Repeat([]byte{0xff}, 64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := io.ReadAll(brotli.NewReader(bytes.NewReader(tc.in)))
			if err == nil {
				t.Fatalf("decoded %d bytes without error", len(got))
			}
		})
	}
	// A cut stream reports the cut, so callers can tell it from corruption.
	if _, err := io.ReadAll(brotli.NewReader(bytes.NewReader(enc[:len(enc)-1]))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated stream: got %v, want io.ErrUnexpectedEOF", err)
	}
}

// Streams from the reference brotli CLI at quality 11 with windows of 2^25
// and 2^30 (upstream's own large-window test vectors): only a reader that
// asks for large windows accepts them.
func TestDecodeLargeWindow(t *testing.T) {
	want := bytes.Repeat([]byte("Brotli PDF stream\n"), 4096)
	for _, h := range []string{
		"1159fd7f047e67821d3bc54a87d99742506f452497204674a990c656043d56216084fc931cf52200",
		"115efd7f047e67821d3bc54a87d99742506f452497204674a990c656043d56216084fc931cf52200",
	} {
		enc, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(brotli.NewReader(bytes.NewReader(enc))); err == nil {
			t.Error("ordinary reader accepted a large-window stream")
		}
		got, err := io.ReadAll(brotli.NewReaderOptions(bytes.NewReader(enc), brotli.ReaderOptions{LargeWindow: true}))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("large-window reader: %d bytes, %v", len(got), err)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder, which must return an
// error rather than panic, and checks that the fuzzed input, compressed
// by upstream, comes back unchanged.
func FuzzDecode(f *testing.F) {
	for _, q := range []int{0, 1, 5, 11} {
		f.Add(encode(f, []byte("seed text, seed text, seed text and some more text"), q, 0))
	}
	f.Add(encode(f, nil, 1, 0))
	f.Add([]byte{0x11, 0x09})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Bound the output: a few bytes of input can declare gigabytes.
		r := brotli.NewReader(bytes.NewReader(data))
		if _, err := io.Copy(io.Discard, io.LimitReader(r, 16<<20)); err != nil {
			if err.Error() == "" {
				t.Fatal("error without a message")
			}
		}

		enc := encode(t, data, 1, 0)
		got, err := io.ReadAll(brotli.NewReader(bytes.NewReader(enc)))
		if err != nil {
			t.Fatalf("decoding upstream's stream of %d bytes: %v", len(data), err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("round trip: got %d bytes, want %d", len(got), len(data))
		}
	})
}
