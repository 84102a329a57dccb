// Package chmod parses and applies chmod(1)-style mode changes as used by
// mkdwarfs --chmod: comma-separated octal or symbolic clauses, each
// optionally prefixed with D or F to affect only directories or only
// non-directories.
package chmod

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

type chmodClause struct {
	dirs, files bool // D / F prefix restricts the clause
	who         uint32
	ops         []chmodOp
	octal       *uint32
}

type chmodOp struct {
	op    byte // '+', '-', '='
	perms string
}

// Changer applies parsed --chmod clauses.
type Changer struct{ clauses []chmodClause }

// Parse parses a --chmod specification such as "a+r,u-w,Dgo+x" or "F644".
func Parse(spec string) (*Changer, error) {
	mc := &Changer{}
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
			mc.clauses = append(mc.clauses, c)
			continue
		}
		i := 0
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
			perm = *c.octal
			continue
		}
		for _, o := range c.ops {
			var bitsSet uint32
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
				case 's':
					bitsSet |= 0o6000
				case 't':
					bitsSet |= 0o1000
				case 'u':
					u := (perm >> 6) & 7
					bitsSet |= u<<6 | u<<3 | u
				case 'g':
					g := (perm >> 3) & 7
					bitsSet |= g<<6 | g<<3 | g
				case 'o':
					x := perm & 7
					bitsSet |= x<<6 | x<<3 | x
				}
			}
			bitsSet &= c.who
			switch o.op {
			case '+':
				perm |= bitsSet
			case '-':
				perm &^= bitsSet
			case '=':
				perm = perm&^(c.who&0o777|c.who&0o7000&^0o1000) | bitsSet
			}
		}
	}
	return typ | perm
}
