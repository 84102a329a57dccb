// Package chmod parses and applies chmod(1)-style mode changes as used by
// mkdwarfs --chmod: comma-separated octal or symbolic clauses, each
// optionally prefixed with D or F to affect only directories or only
// non-directories, or "norm" (Norm).
package chmod

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Norm is what --chmod=norm stands for, as in the reference mkdwarfs:
// no set-id bits, and everything readable (and searchable, for
// directories and executables) but not writable, within the umask.
const Norm = "ug-st,=Xr"

type chmodClause struct {
	dirs, files bool // D / F prefix restricts the clause
	who         uint32
	whoGiven    bool // without u, g, o or a the umask limits the bits set
	ops         []chmodOp
	octal       *uint32
	longOctal   bool // five or more digits: set-id bits of directories too
}

type chmodOp struct {
	op    byte // '+', '-', '='
	perms string
}

// Changer applies parsed --chmod clauses.
type Changer struct {
	clauses []chmodClause
	umask   uint32
}

// Parse parses a --chmod specification such as "a+r,u-w,Dgo+x", "F644" or
// "norm". As chmod(1) does, a clause without u, g, o or a sets only bits
// the umask allows.
func Parse(spec string, umask uint32) (*Changer, error) {
	if spec == "norm" {
		spec = Norm
	}
	mc := &Changer{umask: umask & 0o7777}
	for _, cl := range strings.Split(spec, ",") {
		if cl == "" {
			return nil, fmt.Errorf("invalid --chmod %q: empty clause", spec)
		}
		c := chmodClause{dirs: true, files: true}
		switch cl[0] {
		case 'D':
			c.files = false
			cl = cl[1:]
		case 'F':
			c.dirs = false
			cl = cl[1:]
		}
		if cl != "" && cl[0] >= '0' && cl[0] <= '7' {
			v, err := strconv.ParseUint(cl, 8, 32)
			if err != nil || v > 0o7777 {
				return nil, fmt.Errorf("invalid --chmod octal mode %q", cl)
			}
			o := uint32(v)
			c.octal = &o
			c.longOctal = len(cl) > 4
			mc.clauses = append(mc.clauses, c)
			continue
		}
		i := 0
		c.whoGiven = i < len(cl) && strings.IndexByte("ugoa", cl[i]) >= 0
		for ; i < len(cl) && strings.IndexByte("ugoa", cl[i]) >= 0; i++ {
			switch cl[i] {
			case 'u':
				c.who |= 0o4700
			case 'g':
				c.who |= 0o2070
			case 'o':
				c.who |= 0o1007
			case 'a':
				c.who |= 0o7777
			}
		}
		if c.who == 0 {
			c.who = 0o7777
		}
		if i == len(cl) {
			return nil, fmt.Errorf("invalid --chmod clause %q: missing operator", cl)
		}
		for i < len(cl) {
			op := cl[i]
			if op != '+' && op != '-' && op != '=' {
				return nil, fmt.Errorf("invalid --chmod clause %q: bad operator %q", cl, op)
			}
			i++
			j := i
			for ; j < len(cl) && strings.IndexByte("rwxXstugo", cl[j]) >= 0; j++ {
			}
			c.ops = append(c.ops, chmodOp{op: op, perms: cl[i:j]})
			i = j
		}
		mc.clauses = append(mc.clauses, c)
	}
	return mc, nil
}

// Apply returns mode (full st_mode) with the permission bits changed.
func (mc *Changer) Apply(mode uint32) uint32 {
	isDir := mode&syscall.S_IFMT == syscall.S_IFDIR
	typ := mode &^ 0o7777
	perm := mode & 0o7777
	for _, c := range mc.clauses {
		if (isDir && !c.dirs) || (!isDir && !c.files) {
			continue
		}
		if c.octal != nil {
			// As chmod(1): a directory keeps set-id bits the octal mode
			// (of up to four digits) leaves out.
			old := perm
			perm = *c.octal
			if isDir && !c.longOctal {
				perm |= old & 0o6000
			}
			continue
		}
		for _, o := range c.ops {
			// named: the bits the clause names (for = on directories).
			var bitsSet, named uint32
			for _, p := range []byte(o.perms) {
				switch p {
				case 'r':
					bitsSet |= 0o444
				case 'w':
					bitsSet |= 0o222
				case 'x':
					bitsSet |= 0o111
				case 'X':
					if isDir || perm&0o111 != 0 {
						bitsSet |= 0o111
					}
					continue
				case 's':
					bitsSet |= 0o6000
				case 't':
					bitsSet |= 0o1000
				case 'u':
					u := (perm >> 6) & 7
					bitsSet |= u<<6 | u<<3 | u
					named |= 0o700
					continue
				case 'g':
					g := (perm >> 3) & 7
					bitsSet |= g<<6 | g<<3 | g
					named |= 0o070
					continue
				case 'o':
					x := perm & 7
					bitsSet |= x<<6 | x<<3 | x
					named |= 0o007
					continue
				}
				named = bitsSet
			}
			// As chmod(1): = on a directory keeps set-id bits it does
			// not name.
			var keep uint32
			if isDir {
				keep = 0o6000 &^ (named & c.who)
			}
			if c.whoGiven {
				bitsSet &= c.who &^ keep
			} else {
				bitsSet &= ^mc.umask & 0o7777 &^ keep
			}
			switch o.op {
			case '+':
				perm |= bitsSet
			case '-':
				perm &^= bitsSet
			case '=':
				clear := uint32(0o7777)
				if c.whoGiven {
					clear = c.who
				}
				perm = perm&^(clear&^keep) | bitsSet
			}
		}
	}
	return typ | perm
}

// ProcessUmask returns the process's umask without changing it (which
// would race with files being created elsewhere): from /proc/self/status,
// else the common 022.
func ProcessUmask() uint32 {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return uint32(n)
				}
			}
		}
	}
	return 0o022
}
