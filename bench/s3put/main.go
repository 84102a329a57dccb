// Command s3put uploads a directory tree below s3://BUCKET/PREFIX/ with
// parallel PutObject calls, one object a file, for the S3 input bench.
// The endpoint and credentials come from the AWS environment variables.
//
//	s3put [-j N] DIR s3://BUCKET/PREFIX/
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"
)

func main() {
	jobs := flag.Int("j", 32, "parallel uploads")
	flag.Parse()
	if flag.NArg() != 2 || !strings.HasPrefix(flag.Arg(1), "s3://") {
		fmt.Fprintln(os.Stderr, "usage: s3put [-j N] DIR s3://BUCKET/PREFIX/")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *jobs); err != nil {
		fmt.Fprintln(os.Stderr, "s3put:", err)
		os.Exit(1)
	}
}

func run(dir, dst string, jobs int) error {
	ctx := context.Background()
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(dst, "s3://"), "/")
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") && !strings.Contains(err.Error(), "BucketAlreadyExists") {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		key := prefix + filepath.ToSlash(rel)
		g.Go(func() error {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return err
			}
			_, err = c.PutObject(gctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: f, ContentLength: aws.Int64(st.Size())})
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			return nil
		})
		return gctx.Err()
	})
	if werr := g.Wait(); err == nil {
		err = werr
	}
	return err
}
