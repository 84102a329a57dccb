package block

import "fmt"

// SectionError is returned for problems tied to one section. It names the
// image, the section position and type, and wraps the cause (often one of
// the sentinels ErrCorrupt, ErrChecksum, ErrUnsupported, ErrTooLarge).
type SectionError struct {
	Name  string      // image name (Options.Name)
	Index int         // section position in file order
	Type  SectionType // section type
	Msg   string      // what is wrong
	Err   error       // cause; may be nil
}

func (e *SectionError) Error() string {
	s := fmt.Sprintf("%s: section %d (%s): %s", e.Name, e.Index, e.Type, e.Msg)
	if e.Err != nil && !isSentinel(e.Err) {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *SectionError) Unwrap() error { return e.Err }

// sectionErr builds a SectionError; msg describes the problem and cause is
// what errors.Is/As should find.
func (im *Image) sectionErr(s Section, cause error, format string, args ...any) error {
	return &SectionError{Name: im.name, Index: s.Index, Type: s.Type, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// isSentinel reports whether err is one of the bare package sentinels; those
// are not repeated in messages because Msg already says what is wrong.
func isSentinel(err error) bool {
	switch err {
	case ErrCorrupt, ErrChecksum, ErrUnsupported, ErrTooLarge, ErrClosed:
		return true
	}
	return false
}
