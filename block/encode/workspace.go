package encode

// Workspace is memory an encoder keeps from one input to the next, for a
// worker that compresses many blocks in a row: at zstd's ultra levels and
// lzma's high presets an encoder's match tables are hundreds of MiB, and
// setting them up afresh for every block costs page faults that reusing
// them does not (the output is the same either way). A Workspace is for
// one goroutine at a time; Close frees it. The zero value and nil are
// ready to use.
type Workspace struct {
	zstd zstdWorkspace
	lzma lzmaWorkspace
}

// NewWorkspace returns an empty Workspace; encoders fill it on first use.
func NewWorkspace() *Workspace { return &Workspace{} }

// Close frees what the encoders keep. The Workspace can be used again.
func (w *Workspace) Close() {
	if w != nil {
		w.zstd.close()
		w.lzma.close()
	}
}

type workspaced interface {
	withWorkspace(w *Workspace) Compressor
}

// WithWorkspace returns c set to keep its state in w between inputs.
// Compressors with nothing worth keeping are returned as they are. The
// returned compressor must not be used by two goroutines at once.
func WithWorkspace(c Compressor, w *Workspace) Compressor {
	if wc, ok := c.(workspaced); ok && w != nil {
		return wc.withWorkspace(w)
	}
	return c
}
