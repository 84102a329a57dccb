package s3source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/godwarfs/godwarfs/source"
)

// UploadOptions tune Upload.
type UploadOptions struct {
	// PartSize is the size of each part but the last (default 8 MiB,
	// raised as needed to stay within S3's 10,000 parts; at least 5 MiB,
	// S3's minimum).
	PartSize int64
	// Workers bounds the parts in flight (default 4).
	Workers int
	// Progress, if set, is called with the bytes stored so far.
	Progress func(done int64)
}

// S3's limits on multipart uploads.
const (
	minPart  = 5 << 20
	maxParts = 10000
)

// Upload stores size bytes of r as bucket/key with a multipart upload.
// Parts go up in parallel, each retried as image reads are (throttling,
// server errors, resets); the object appears at the key only when the
// upload is completed, after every part is stored. Any failure, a
// cancelled ctx included, aborts the upload, so that neither an object
// nor stored parts are left behind.
func (c *Client) Upload(ctx context.Context, bucket, key string, r io.ReaderAt, size int64, uo UploadOptions) (err error) {
	name := "s3://" + bucket + "/" + key
	partSize := uo.PartSize
	if partSize <= 0 {
		partSize = 8 << 20
	}
	partSize = max(partSize, minPart, (size+maxParts-1)/maxParts)
	workers := uo.Workers
	if workers <= 0 {
		workers = 4
	}
	var created *s3.CreateMultipartUploadOutput
	err = source.Retry(ctx, c.o, func(ctx context.Context) error {
		var err error
		created, err = c.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
		return s3Err(err)
	})
	if err != nil {
		return fmt.Errorf("%s: starting the upload: %w", name, err)
	}
	id := created.UploadId
	defer func() {
		if err != nil {
			// The build's context may be the reason: abort on one of its
			// own.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if aerr := c.abort(actx, bucket, key, id); aerr != nil {
				err = fmt.Errorf("%w; aborting the upload failed too, its parts may be left: %w", err, aerr)
			}
		}
	}()
	n := max(1, (size+partSize-1)/partSize)
	parts := make([]types.CompletedPart, n)
	var done atomic.Int64
	var progressMu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error {
			off := i * partSize
			ln := min(partSize, size-off)
			num := int32(i + 1)
			var out *s3.UploadPartOutput
			err := source.Retry(gctx, c.o, func(ctx context.Context) error {
				var err error
				out, err = c.client.UploadPart(ctx, &s3.UploadPartInput{
					Bucket: &bucket, Key: &key, UploadId: id, PartNumber: &num,
					Body: io.NewSectionReader(r, off, ln), ContentLength: &ln,
				})
				return s3Err(err)
			})
			if err != nil {
				return fmt.Errorf("%s: part %d (bytes %d-%d): %w", name, num, off, off+ln-1, err)
			}
			parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: &num}
			if uo.Progress != nil {
				progressMu.Lock()
				uo.Progress(done.Add(ln))
				progressMu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	start := time.Now()
	attempts := 0
	err = source.Retry(ctx, c.o, func(ctx context.Context) error {
		attempts++
		_, err := c.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: &bucket, Key: &key, UploadId: id,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		})
		// An earlier attempt may have completed the upload and lost
		// only its answer: the upload is then gone and the object there.
		if attempts > 1 && status(err) == http.StatusNotFound {
			if obj, ok, serr := c.Stat(ctx, bucket, key); serr == nil && ok && obj.Size == size && !obj.LastModified.Before(start.Add(-time.Minute)) {
				return nil
			}
		}
		return s3Err(err)
	})
	if err != nil {
		return fmt.Errorf("%s: completing the upload: %w", name, err)
	}
	return nil
}

// abort aborts a multipart upload; one that is already gone is fine.
func (c *Client) abort(ctx context.Context, bucket, key string, id *string) error {
	return source.Retry(ctx, c.o, func(ctx context.Context) error {
		_, err := c.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: id})
		if status(err) == http.StatusNotFound {
			return nil
		}
		return s3Err(err)
	})
}

// UploadFile uploads the local file path as bucket/key (see Upload).
func (c *Client) UploadFile(ctx context.Context, path, bucket, key string, uo UploadOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errors.New(path + ": not a regular file")
	}
	return c.Upload(ctx, bucket, key, f, st.Size(), uo)
}
