package flac

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRicePredicted checks the fused Rice and prediction loops of every
// width against the plain definition: residuals written with the
// encoder's bit writer (some with quotients too long for the cache, which
// the loops leave to the slow path, and some at the very end of the
// input) and decoded with random predictors of every order.
func TestRicePredicted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for order := 1; order <= 32; order++ {
		for _, n := range []int{order, order + 1, 33, 100, 1000} {
			if n < order {
				continue
			}
			k := uint(rng.IntN(15))
			coefs := make([]int64, order)
			for j := range coefs {
				coefs[j] = rng.Int64N(1<<15) - 1<<14
			}
			shift := uint(rng.IntN(16))
			want := make([]int64, n)
			for i := range order {
				want[i] = rng.Int64N(1<<16) - 1<<15
			}
			res := make([]int64, n)
			var w bitWriter
			for i := order; i < n; i++ {
				r := rng.Int64N(1<<(k+2)) - 1<<(k+1)
				if rng.IntN(50) == 0 {
					r = rng.Int64N(1<<(k+8)) - 1<<(k+7) // quotient beyond the cache
				}
				res[i] = r
				folded := uint64(r<<1) ^ uint64(r>>63)
				for q := folded >> k; q > 0; q-- {
					w.write(0, 1)
				}
				w.write(1, 1)
				w.write(folded, k)
				var sum int64
				for j, c := range coefs {
					sum += c * want[i-order+j]
				}
				want[i] = r + sum>>shift
			}
			w.align()
			var br bitReader
			br.reset(w.buf)
			got := make([]int64, n)
			copy(got, want[:order])
			var p predictor
			p.set(coefs, shift)
			if err := br.ricePredicted(got, order, n, k, &p); err != nil {
				t.Fatalf("order %d, %d samples, k %d: %v", order, n, k, err)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("order %d (width %d), %d samples, k %d, shift %d: sample %d is %d, want %d (residual %d)",
						order, p.width, n, k, shift, i, got[i], want[i], res[i])
				}
			}
			if br.bytePos() != len(w.buf) {
				t.Errorf("order %d, %d samples: read %d of %d bytes", order, n, br.bytePos(), len(w.buf))
			}
		}
	}
}

// TestFusedGenerated checks that fused_gen.go is what gen_fused.go
// writes (go generate was run after the generator's last change).
func TestFusedGenerated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "fused_gen.go")
	cmd := exec.Command("go", "run", "gen_fused.go", "-o", out)
	// The generator runs here, whatever platform the tests are built for
	// (make test-s390x runs them under qemu with GOARCH set).
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run gen_fused.go: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("fused_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("fused_gen.go differs from what gen_fused.go writes: run go generate in block/flac")
	}
}
