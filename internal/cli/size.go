package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a byte count with an optional binary suffix (k, m, g, t;
// case-insensitive, optional trailing "b" or "ib"), as in "512m" or "2GiB".
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "b"), "i")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size %q", s)
	}
	if n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q out of range", s)
	}
	return n * mult, nil
}
