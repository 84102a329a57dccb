package mkdwarfs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/s3input"
	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/s3source"
	"github.com/godwarfs/godwarfs/writer"
)

// s3Options are the settings of every S3 access of mkdwarfs: the input
// prefix, the output object and merge inputs. Endpoint, region and
// credentials come from the environment, as for the images mkdwarfs reads
// at s3:// URLs.
func s3Options(cfg *Config) source.Options {
	return source.Options{Workers: max(cfg.Workers, 4)}
}

// s3Tree returns the tree source of an -i s3://BUCKET/PREFIX/ input.
func s3Tree(cfg *Config) *s3input.Source {
	o := s3Options(cfg)
	o.Workers = 16
	return s3input.New(cfg.S3Input, s3input.Options{Source: o, TempDir: cfg.TarOptions.TempDir})
}

// mainUpload builds, rewrites or merges the image into a temporary file
// and, when that succeeded, uploads it to the s3:// URL cfg.Output names
// with a multipart upload: the object appears only once it is complete,
// and a failed build or upload leaves nothing at the key.
func mainUpload(ctx context.Context, cfg *Config, stdout, stderr io.Writer) int {
	dst := cfg.Output
	bucket, key, err := s3source.SplitURL(dst)
	if err == nil && (key == "" || strings.HasSuffix(key, "/")) {
		err = fmt.Errorf("%s: an S3 output is s3://BUCKET/KEY, not a prefix", dst)
	}
	if err != nil {
		return Program().Fail(stderr, &cli.UsageError{Msg: err.Error()})
	}
	c, err := s3source.NewClient(ctx, s3Options(cfg))
	if err != nil {
		return Program().Fail(stderr, fmt.Errorf("%s: %w", dst, err))
	}
	defer c.Close()
	if !cfg.Force {
		// As for a local output: an existing image is kept unless -f.
		if _, exists, err := c.Stat(ctx, bucket, key); err != nil {
			return Program().Fail(stderr, err)
		} else if exists {
			return Program().Fail(stderr, fmt.Errorf("%s: the object exists (use -f to overwrite)", dst))
		}
	}
	dir, err := os.MkdirTemp(cfg.TarOptions.TempDir, "mkdwarfs-upload-")
	if err != nil {
		return Program().Fail(stderr, fmt.Errorf("a temporary file for the image: %w", err))
	}
	defer os.RemoveAll(dir)
	code := buildInto(ctx, cfg, filepath.Join(dir, "image.dwarfs"), stdout, stderr)
	if code != cli.ExitOK && code != cli.ExitPartial {
		return code
	}
	uo := s3source.UploadOptions{Workers: max(cfg.Workers, 4)}
	if err := c.UploadFile(ctx, cfg.Output, bucket, key, uo); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "mkdwarfs: interrupted, the upload was aborted")
			return cli.ExitError
		}
		return Program().Fail(stderr, fmt.Errorf("the image was built, but not uploaded: %w", err))
	}
	if cfg.LogLevel >= logInfo {
		fmt.Fprintf(stderr, "uploaded %s\n", dst)
	}
	if cfg.Signer != nil {
		// --sign wrote OUTPUT.sig beside the temporary file; it goes
		// where dwarfsck --verify looks for it.
		if err := c.UploadFile(ctx, cfg.Output+".sig", bucket, key+".sig", uo); err != nil {
			return Program().Fail(stderr, fmt.Errorf("the image was uploaded, but not its signature: %w", err))
		}
		if cfg.LogLevel >= logInfo {
			fmt.Fprintf(stderr, "uploaded its signature to %s.sig\n", dst)
		}
	}
	return code
}

// expandMergeGlobs replaces the merge inputs that are s3:// patterns
// (s3://BUCKET/PREFIX/shard-*.dwarfs) by the objects that match, sorted
// by key. An input without NAME= goes to the directory its own name
// gives, or with --merge-into-root to the root.
func expandMergeGlobs(ctx context.Context, cfg *Config, mo *writer.MergeOptions) error {
	if len(cfg.mergeGlobs) == 0 {
		return nil
	}
	c, err := s3source.NewClient(ctx, s3Options(cfg))
	if err != nil {
		return err
	}
	defer c.Close()
	var ins []writer.MergeInput
	for i, in := range mo.Inputs {
		named, glob := cfg.mergeGlobs[i]
		if !glob {
			ins = append(ins, in)
			continue
		}
		urls, err := c.Glob(ctx, in.Image)
		if err != nil {
			return err
		}
		for _, u := range urls {
			m := writer.MergeInput{Image: u, At: in.At}
			if !named && !cfg.mergeIntoRoot {
				m.At = writer.DefaultMergeAt(u)
			}
			ins = append(ins, m)
		}
	}
	mo.Inputs = ins
	return nil
}
