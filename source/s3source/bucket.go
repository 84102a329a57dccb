package s3source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/internal/httpfetch"
)

// ErrGone reports an object that was listed but no longer exists.
var ErrGone = errors.New("object no longer exists")

// SplitURL splits s3://BUCKET[/KEY] into bucket and key; unlike an image
// URL the key may be empty or a prefix.
func SplitURL(name string) (bucket, key string, err error) {
	u, err := url.Parse(name)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", source.Redact(name), httpfetch.RedactErr(err))
	}
	if !strings.EqualFold(u.Scheme, "s3") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return "", "", fmt.Errorf("%s: not an S3 location s3://BUCKET/KEY (credentials come from the environment or the shared config files)", source.Redact(name))
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), nil
}

// IsURL reports whether name is an s3:// URL.
func IsURL(name string) bool {
	return len(name) > 5 && strings.EqualFold(name[:5], "s3://")
}

// Object is one object of a listing.
type Object struct {
	Key          string
	Size         int64
	ETag         string // as the server sent it, quotes included
	LastModified time.Time
}

// List returns the objects whose keys start with prefix, sorted by key.
// The listing is read page by page (ListObjectsV2 with continuation;
// pageSize keys a page, 0 for the server's default), each page retried
// as image reads are.
func (c *Client) List(ctx context.Context, bucket, prefix string, pageSize int) ([]Object, error) {
	var objs []Object
	var token *string
	seen := map[string]bool{}
	for {
		in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, ContinuationToken: token}
		if pageSize > 0 {
			in.MaxKeys = aws.Int32(int32(pageSize))
		}
		var out *s3.ListObjectsV2Output
		err := source.Retry(ctx, c.o, func(ctx context.Context) error {
			var err error
			out, err = c.client.ListObjectsV2(ctx, in)
			return s3Err(err)
		})
		if err != nil {
			return nil, fmt.Errorf("listing s3://%s/%s: %w", bucket, prefix, err)
		}
		for _, o := range out.Contents {
			ob := Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag)}
			if o.LastModified != nil {
				ob.LastModified = o.LastModified.UTC()
			}
			objs = append(objs, ob)
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		next := aws.ToString(out.NextContinuationToken)
		// A server that repeats a token would list forever.
		if next == "" || seen[next] {
			return nil, fmt.Errorf("listing s3://%s/%s: the server's listing does not advance (continuation token %q)", bucket, prefix, next)
		}
		seen[next] = true
		token = &next
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	return objs, nil
}

// Stat returns the object at key; ok is false when there is none.
func (c *Client) Stat(ctx context.Context, bucket, key string) (obj Object, ok bool, err error) {
	var out *s3.HeadObjectOutput
	err = source.Retry(ctx, c.o, func(ctx context.Context) error {
		var err error
		out, err = c.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
		if status(err) == http.StatusNotFound {
			return nil
		}
		return s3Err(err)
	})
	if err != nil {
		return Object{}, false, fmt.Errorf("s3://%s/%s: %w", bucket, key, err)
	}
	if out == nil {
		return Object{}, false, nil
	}
	obj = Object{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}
	if out.LastModified != nil {
		obj.LastModified = out.LastModified.UTC()
	}
	return obj, true, nil
}

// status returns the HTTP status of a failed request, or 0.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// Get copies bytes [off, off+n) of the object as listed (ver) to w at
// woff, through buf, retried as image reads are. It fails with an error
// wrapping source.ErrChanged when the object is no longer that version
// (its ETag or size differ), and ErrGone when it was deleted. A retry
// rewrites the range from its start.
func (c *Client) Get(ctx context.Context, bucket string, ver Object, off, n int64, w io.WriterAt, woff int64, buf []byte) error {
	if n <= 0 {
		return nil
	}
	if len(buf) == 0 {
		buf = make([]byte, 256<<10)
	}
	in := &s3.GetObjectInput{
		Bucket: &bucket, Key: &ver.Key,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1)),
	}
	if ver.ETag != "" {
		in.IfMatch = aws.String(ver.ETag)
	}
	return source.Retry(ctx, c.o, func(ctx context.Context) error {
		out, err := c.client.GetObject(ctx, in)
		if err != nil {
			switch status(err) {
			case http.StatusNotFound:
				return fmt.Errorf("%w (server answered %s)", ErrGone, s3Err(err))
			case http.StatusRequestedRangeNotSatisfiable:
				return fmt.Errorf("%w (it is shorter than listed)", source.ErrChanged)
			}
			return s3Err(err)
		}
		defer httpfetch.Drain(out.Body)
		if et := aws.ToString(out.ETag); ver.ETag != "" && et != "" && et != ver.ETag {
			return fmt.Errorf("%w (ETag %s, listed %s)", source.ErrChanged, et, ver.ETag)
		}
		if cr := aws.ToString(out.ContentRange); cr != "" {
			s, e, total, err := httpfetch.ParseContentRange(cr)
			if err != nil {
				return err
			}
			if total >= 0 && total != ver.Size {
				return fmt.Errorf("%w (size %d, listed %d)", source.ErrChanged, total, ver.Size)
			}
			if s != off || e != off+n-1 {
				return fmt.Errorf("server sent bytes %d-%d for a request of %d-%d", s, e, off, off+n-1)
			}
		} else if off != 0 || n != ver.Size || aws.ToInt64(out.ContentLength) != n {
			return errors.New("server ignored the Range header")
		}
		for done := int64(0); done < n; {
			m, err := out.Body.Read(buf[:min(int64(len(buf)), n-done)])
			if m > 0 {
				if _, werr := w.WriteAt(buf[:m], woff+done); werr != nil {
					return werr
				}
				done += int64(m)
			}
			if err != nil {
				if done == n && err == io.EOF {
					break
				}
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return source.Retryable(fmt.Errorf("response body cut short after %d of %d bytes: %w", done, n, httpfetch.NetErr(err)), 0)
			}
		}
		return nil
	})
}

// HasGlob reports whether an s3:// URL's key holds path.Match
// metacharacters.
func HasGlob(name string) bool {
	_, key, ok := splitPattern(name)
	return ok && strings.ContainsAny(key, `*?[\`)
}

// splitPattern splits s3://BUCKET/PATTERN as it is written: a ? there is
// a metacharacter, not the start of a query.
func splitPattern(name string) (bucket, key string, ok bool) {
	if !IsURL(name) {
		return "", "", false
	}
	bucket, key, _ = strings.Cut(name[5:], "/")
	return bucket, key, bucket != "" && !strings.Contains(bucket, "@")
}

// Glob returns the s3:// URLs of the objects whose keys match the key of
// the URL pattern (path.Match syntax: * and ? do not match /), sorted.
// It lists the keys that start with the pattern's literal prefix. No
// match is an error naming the pattern.
func (c *Client) Glob(ctx context.Context, pattern string) ([]string, error) {
	bucket, key, ok := splitPattern(pattern)
	if !ok {
		return nil, fmt.Errorf("%s: not an S3 pattern s3://BUCKET/KEY-PATTERN", source.Redact(pattern))
	}
	if _, err := path.Match(key, ""); err != nil {
		return nil, fmt.Errorf("%s: bad pattern: %w", pattern, err)
	}
	prefix := key[:strings.IndexAny(key+"*", `*?[\`)]
	objs, err := c.List(ctx, bucket, prefix, 0)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, o := range objs {
		if ok, _ := path.Match(key, o.Key); ok {
			urls = append(urls, "s3://"+bucket+"/"+o.Key)
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("%s: no object matches", pattern)
	}
	return urls, nil
}
