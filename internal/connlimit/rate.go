package connlimit

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// A reply is only as fast as its reader: a peer that reads slowly holds
// its connection's place, and the kernel's buffers, for as long as it
// likes. MinRate sets a floor, as nginx's send_timeout or Apache's MinRate
// do. Every byte written must be taken by the peer within RateGrace of
// when it would have been at the minimum rate, counted from the start of
// the writes in progress (a pause in writing earns no credit), so a peer
// that reads slower than the rate is cut within RateGrace plus one chunk
// at the rate, and one that keeps up never is.
const (
	// RateGrace is the slack every write gets on top of its time at the
	// minimum rate: round trips, a window opening, a scheduler's delay.
	RateGrace = 2 * time.Second
	// rateChunk is the largest write timed at once, so that a long reply
	// is measured as it goes rather than as a whole.
	rateChunk = 4 << 10
	// SendBuffer is the socket send buffer MinRate asks for (the kernel
	// doubles it): what the kernel holds for a peer that does not read,
	// beyond the rate, and what it keeps after a cut.
	SendBuffer = 32 << 10
)

// ErrSlowReader is the error of a write cut because its peer read slower
// than the minimum rate; it wraps os.ErrDeadlineExceeded.
var ErrSlowReader = errors.New("peer reads slower than the minimum rate")

// RateConn is a connection whose writes must be read at a minimum rate.
// Its deadlines work as the connection's own, the earlier of theirs and
// the rate's applying to a write.
type RateConn struct {
	net.Conn
	perByte time.Duration

	mu       sync.Mutex
	due      time.Time // when the bytes written so far are due at the rate
	deadline time.Time // the write deadline set through SetDeadline or SetWriteDeadline
	slow     bool
}

// MinRate wraps c so that a peer reading slower than rate bytes a second
// (positive) is cut: the write fails with ErrSlowReader, and the caller
// closes the connection. A TCP connection's send buffer is made
// SendBuffer, so that the rate is the peer's and not the kernel's.
func MinRate(c net.Conn, rate int) *RateConn {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(SendBuffer)
	}
	return &RateConn{Conn: c, perByte: time.Second / time.Duration(rate)}
}

// Write writes b, chunk by chunk, each within its time at the rate.
func (c *RateConn) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := min(len(b), rateChunk)
		dl, ours := c.next(n, time.Now())
		if err := c.Conn.SetWriteDeadline(dl); err != nil {
			return written, err
		}
		m, err := c.Conn.Write(b[:n])
		written += m
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.mu.Lock()
				c.slow = true
				c.mu.Unlock()
				if ours {
					err = fmt.Errorf("%w: %w", ErrSlowReader, err)
				}
			}
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// next accounts for n more bytes written at now and returns the deadline
// of their write, and whether it is the rate's rather than the caller's.
func (c *RateConn) next(n int, now time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.due.Before(now) {
		c.due = now
	}
	c.due = c.due.Add(time.Duration(n) * c.perByte)
	dl := c.due.Add(RateGrace)
	if !c.deadline.IsZero() && c.deadline.Before(dl) {
		return c.deadline, false
	}
	return dl, true
}

// SetDeadline sets the read and write deadlines, as net.Conn's does.
func (c *RateConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

// SetWriteDeadline sets the write deadline, as net.Conn's does.
func (c *RateConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// Slow reports whether a write timed out: its peer did not take it in
// time, by the rate or by the caller's own deadline (an HTTP server's
// write timeout, say).
func (c *RateConn) Slow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slow
}
