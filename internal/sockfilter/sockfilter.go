// Package sockfilter drops datagrams that cannot be requests in the
// kernel, before they reach a read loop: a classic BPF socket filter
// compiled from the shapes a protocol's requests can take, and the
// socket's count of the datagrams the kernel dropped.
//
// A Shape is a list of checks on a datagram's payload (offsets are from
// the first byte after the UDP header); a datagram passes a filter if it
// passes every check of at least one of its shapes. The checks are the
// cheap ones a header allows: bytes, masked bytes, lengths, and a length
// field that must match the datagram's size. A filter is a first sieve,
// never the decoder: whatever passes is still parsed in full.
package sockfilter

import (
	"encoding/binary"
	"fmt"
	"net"

	"golang.org/x/net/bpf"
)

// udpHeader is the size of the UDP header, where a UDP socket's filter
// sees the datagram start.
const udpHeader = 8

// Check is one test of a Shape.
type Check struct {
	off, size int    // the field: payload offset and 1, 2 or 4 bytes, big-endian
	mask      uint32 // applied to the field first, when not 0
	vals      []uint32
	plus      int // for a length field: what the datagram adds to it
	min, max  int // for a length or a field's bounds
	kind      checkKind
}

type checkKind uint8

const (
	isOneOf  checkKind = iota // the field is one of vals
	isLength                  // min <= payload length <= max
	isSizeOf                  // the field + plus is the payload length, the field at most max
)

// Shape is the checks one kind of request passes.
type Shape []Check

// Byte checks that the byte at off is one of vals.
func Byte(off int, vals ...byte) Check {
	c := Check{off: off, size: 1, kind: isOneOf}
	for _, v := range vals {
		c.vals = append(c.vals, uint32(v))
	}
	return c
}

// Masked checks that the byte at off, and mask, is val.
func Masked(off int, mask, val byte) Check {
	return Check{off: off, size: 1, mask: uint32(mask), vals: []uint32{uint32(val)}, kind: isOneOf}
}

// Bytes checks that the payload holds want at off.
func Bytes(off int, want []byte) []Check {
	var cs []Check
	for len(want) > 0 {
		size := 4
		for size > len(want) {
			size /= 2
		}
		var v uint32
		for _, b := range want[:size] {
			v = v<<8 | uint32(b)
		}
		cs = append(cs, Check{off: off, size: size, vals: []uint32{v}, kind: isOneOf})
		off, want = off+size, want[size:]
	}
	return cs
}

// Length checks that the payload is min to max bytes long.
func Length(min, max int) Check { return Check{kind: isLength, min: min, max: max} }

// AtLeast checks that the payload is at least min bytes long: a message
// whose longest form is the longest datagram.
func AtLeast(min int) Check { return Check{kind: isLength, min: min, max: -1} }

// SizeField checks that the 16-bit big-endian field at off, plus plus, is
// the payload's length, and that the field is at most max.
func SizeField(off, plus, max int) Check {
	return Check{off: off, size: 2, plus: plus, max: max, kind: isSizeOf}
}

// Program compiles shapes into a classic BPF program that keeps a
// datagram passing any of them and drops the rest.
func Program(shapes ...Shape) ([]bpf.Instruction, error) {
	var prog []bpf.Instruction
	for _, s := range shapes {
		block, err := compile(s)
		if err != nil {
			return nil, err
		}
		prog = append(prog, block...)
	}
	prog = append(prog, bpf.RetConstant{Val: 0})
	if _, err := bpf.Assemble(prog); err != nil {
		return nil, fmt.Errorf("sockfilter: %w", err)
	}
	return prog, nil
}

// keep is what a filter returns to keep a datagram whole: the most bytes
// it may keep.
const keep = 0xFFFFFFFF

// fail marks, while a block is compiled, a jump to the block's end: the
// next shape's first check.
const fail = 0xFF

// compile turns one shape into a block of instructions that ends in
// keeping the datagram, each failed check jumping past it.
func compile(s Shape) ([]bpf.Instruction, error) {
	var b []bpf.Instruction
	for _, c := range s {
		switch c.kind {
		case isOneOf:
			b = append(b, bpf.LoadAbsolute{Off: uint32(udpHeader + c.off), Size: c.size})
			if c.mask != 0 {
				b = append(b, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.mask})
			}
			for i, v := range c.vals {
				if rest := len(c.vals) - 1 - i; rest > 0 {
					b = append(b, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(rest)})
				} else {
					b = append(b, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipFalse: fail})
				}
			}
		case isLength:
			b = append(b, bpf.LoadExtension{Num: bpf.ExtLen},
				bpf.JumpIf{Cond: bpf.JumpLessThan, Val: uint32(udpHeader + c.min), SkipTrue: fail})
			if c.max >= 0 {
				b = append(b, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(udpHeader + c.max), SkipTrue: fail})
			}
		case isSizeOf:
			b = append(b, bpf.LoadAbsolute{Off: uint32(udpHeader + c.off), Size: 2},
				bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(c.max), SkipTrue: fail},
				bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: uint32(udpHeader + c.plus)},
				bpf.TAX{},
				bpf.LoadExtension{Num: bpf.ExtLen},
				bpf.JumpIfX{Cond: bpf.JumpEqual, SkipFalse: fail})
		}
	}
	b = append(b, bpf.RetConstant{Val: keep})
	end := len(b)
	for i, in := range b {
		skip := end - i - 1
		if skip > 0xFE {
			return nil, fmt.Errorf("sockfilter: a shape of %d instructions is too long", end)
		}
		switch j := in.(type) {
		case bpf.JumpIf:
			j.SkipTrue, j.SkipFalse = target(j.SkipTrue, skip), target(j.SkipFalse, skip)
			b[i] = j
		case bpf.JumpIfX:
			j.SkipTrue, j.SkipFalse = target(j.SkipTrue, skip), target(j.SkipFalse, skip)
			b[i] = j
		}
	}
	return b, nil
}

func target(skip uint8, toEnd int) uint8 {
	if skip == fail {
		return uint8(toEnd)
	}
	return skip
}

// Passes reports whether payload, a datagram's bytes after the UDP
// header, passes prog, run by the package's own interpreter as the kernel
// would run it on a UDP socket.
func Passes(prog []bpf.Instruction, payload []byte) (bool, error) {
	vm, err := bpf.NewVM(prog)
	if err != nil {
		return false, err
	}
	pkt := make([]byte, udpHeader, udpHeader+len(payload))
	binary.BigEndian.PutUint16(pkt[4:], uint16(min(udpHeader+len(payload), 0xFFFF)))
	pkt = append(pkt, payload...)
	n, err := vm.Run(pkt)
	return n > 0, err
}

// Set makes shapes c's filter, or, with no shapes, takes away the filter
// c may have (a socket a predecessor filtered keeps its filter when
// handed over).
func Set(c *net.UDPConn, shapes []Shape) error {
	if len(shapes) == 0 {
		return Detach(c)
	}
	prog, err := Program(shapes...)
	if err != nil {
		return err
	}
	return Attach(c, prog)
}

// Keeps reports whether the filter of shapes keeps payload, a datagram's
// bytes after the UDP header: Program and Passes in one call, for a
// protocol's tests to hold its shapes to its parser.
func Keeps(shapes []Shape, payload []byte) bool {
	prog, err := Program(shapes...)
	if err != nil {
		return false
	}
	ok, err := Passes(prog, payload)
	return ok && err == nil
}
