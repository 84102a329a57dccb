package writer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// output is an image being written. A file output goes to a temporary
// file in the output's directory and takes the output's name only in
// Commit, after its data reached the disk, so that a failed, interrupted
// or crashed run never leaves a partial image under that name. Errors name
// the output, not the temporary file.
type output struct {
	path   string
	tmp    *os.File // nil for a stream output
	direct *os.File // an existing device, FIFO or socket written in place
	bw     *bufio.Writer
	n      int64 // bytes written
	exec   bool  // the file is made executable (Target.Executable)
}

// createOutput starts writing the image path, or w when path is "-". An
// existing file is only replaced with overwrite, and never before Commit.
func createOutput(path string, overwrite bool, w io.Writer) (*output, error) {
	if path == "-" {
		return &output{path: "standard output", bw: bufio.NewWriterSize(w, 1<<20)}, nil
	}
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return nil, fmt.Errorf("output %s is a directory", path)
		}
		if !overwrite {
			return nil, &existsError{path}
		}
		if !st.Mode().IsRegular() {
			// A device or FIFO (-o /dev/null) is written in place:
			// renaming a file over it would replace the device.
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return nil, fmt.Errorf("opening output %s: %w", path, bare(err))
			}
			return &output{path: path, direct: f, bw: bufio.NewWriterSize(f, 1<<20)}, nil
		}
	} else if _, lerr := os.Lstat(path); lerr == nil && !overwrite {
		return nil, &existsError{path} // a dangling link
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("creating output %s: %w", path, bare(err))
	}
	return &output{path: path, tmp: tmp, bw: bufio.NewWriterSize(tmp, 1<<20)}, nil
}

// TempName is the temporary file's name ("" for a stream).
func (o *output) TempName() string {
	if o.tmp == nil {
		return ""
	}
	return o.tmp.Name()
}

func (o *output) Write(p []byte) (int, error) {
	n, err := o.bw.Write(p)
	o.n += int64(n)
	if err != nil {
		err = o.fail("writing", err)
	}
	return n, err
}

// Commit makes the image durable under its name: flush, fsync, rename,
// fsync of the directory (the rename is only durable once the directory
// is). On error the temporary file is removed.
func (o *output) Commit(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			o.Abort()
		}
	}()
	if err := o.bw.Flush(); err != nil {
		return o.fail("writing", err)
	}
	if o.direct != nil {
		f := o.direct
		o.direct = nil
		if err := f.Close(); err != nil {
			return o.fail("writing", err)
		}
		return nil
	}
	if o.tmp == nil {
		return nil
	}
	mode := os.FileMode(0o644)
	if o.exec {
		mode = 0o755
	}
	if err := o.tmp.Chmod(mode); err != nil {
		return o.fail("writing", err)
	}
	if err := o.tmp.Sync(); err != nil {
		return o.fail("syncing", err)
	}
	if err := o.tmp.Close(); err != nil {
		return o.fail("writing", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(o.tmp.Name(), o.path); err != nil {
		return o.fail("renaming temporary file to", err)
	}
	o.tmp = nil
	if err := syncDir(filepath.Dir(o.path)); err != nil {
		return o.fail("syncing directory of", err)
	}
	return nil
}

// Abort removes the temporary file; safe after commit and twice.
func (o *output) Abort() {
	if o.direct != nil {
		o.direct.Close()
		o.direct = nil
	}
	if o.tmp != nil {
		o.tmp.Close()
		os.Remove(o.tmp.Name())
		o.tmp = nil
	}
}

// Size is the number of bytes written so far.
func (o *output) Size() int64 { return o.n }

func (o *output) fail(op string, err error) error {
	return fmt.Errorf("%s %s: %w", op, o.path, bare(err))
}

// bare strips the path of an *fs.PathError, which would name the
// temporary file instead of the output.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// existsError refuses to replace an image; errors.Is(err, fs.ErrExist).
type existsError struct{ path string }

func (e *existsError) Error() string        { return "output file " + e.path + " already exists" }
func (e *existsError) Is(target error) bool { return target == fs.ErrExist }
