package sockfilter

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/internal/udptest"
)

// testShapes keep "F?" datagrams of 4 to 8 bytes whose byte 1 is 1 or 2,
// and datagrams that open with a 6-byte magic and carry their own
// length (a 16-bit field at 6, counting the 8 bytes before the rest).
var testShapes = []Shape{
	{Byte(0, 'F'), Byte(1, 1, 2), Length(4, 8)},
	append(Bytes(0, []byte("MAGIC!")), SizeField(6, 8, 100)),
}

// testPayloads are datagrams and whether testShapes keep them.
var testPayloads = []struct {
	b    []byte
	kept bool
}{
	{[]byte("F\x01ab"), true},
	{[]byte("F\x02abcdef"), true},
	{[]byte("F\x03ab"), false},         // byte 1 not in the set
	{[]byte("F\x01a"), false},          // too short
	{[]byte("F\x01abcdefg"), false},    // too long
	{[]byte("G\x01ab"), false},         // first byte
	{[]byte("MAGIC!\x00\x02xy"), true}, // 8 + 2
	{[]byte("MAGIC!\x00\x03xy"), false},
	{[]byte("MAGIC!\x00\x00"), true},
	{[]byte("MAGIC?\x00\x00"), false},
	{[]byte("MAGIC!\x00"), false},                                 // the field cut short
	{[]byte("MAGIC!\x00\x65" + string(make([]byte, 101))), false}, // over the field's max
	{nil, false},
}

// TestProgramKeepsItsShapes runs the compiled program in the package's
// interpreter.
func TestProgramKeepsItsShapes(t *testing.T) {
	prog, err := Program(testShapes...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range testPayloads {
		got, err := Passes(prog, p.b)
		if err != nil || got != p.kept {
			t.Errorf("%q: kept %v (%v), want %v", p.b, got, err, p.kept)
		}
	}
}

// TestKernelAgreesWithPasses attaches the program to a real socket, IPv4
// and IPv6, and sends it every test datagram: what arrives is what Passes
// keeps, in the kernel's own run of the program, and the socket's drop
// count is the rest, read once (Drops) or by a Meter, which allocates
// nothing.
func TestKernelAgreesWithPasses(t *testing.T) {
	for _, ip := range []string{"127.0.0.1", "::1"} {
		t.Run(ip, func(t *testing.T) { testKernelAgreesWithPasses(t, ip) })
	}
}

func testKernelAgreesWithPasses(t *testing.T, ip string) {
	prog, err := Program(testShapes...)
	if err != nil {
		t.Fatal(err)
	}
	srv := udptest.Listen(t, ip)
	if err := Attach(srv, prog); err != nil {
		t.Fatal(err)
	}
	m, err := NewMeter(srv) // as a read loop makes it, before any drop
	if err != nil {
		t.Fatal(err)
	}
	cli := udptest.Listen(t, ip)
	to := srv.LocalAddr().(*net.UDPAddr).AddrPort()
	var want [][]byte
	for _, p := range testPayloads {
		if _, err := cli.WriteToUDPAddrPort(p.b, to); err != nil {
			t.Fatal(err)
		}
		if p.kept {
			want = append(want, p.b)
		}
	}
	end := []byte("F\x01end") // sent last: once it is read, every other was handled
	if _, err := cli.WriteToUDPAddrPort(end, to); err != nil {
		t.Fatal(err)
	}
	want = append(want, end)
	buf := make([]byte, 2048)
	for i, w := range want {
		srv.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := srv.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if !bytes.Equal(buf[:n], w) {
			t.Fatalf("datagram %d is %q, want %q", i, buf[:n], w)
		}
	}
	dropped := len(testPayloads) + 1 - len(want)
	if n, err := Drops(srv); err != nil || int(n) != dropped {
		t.Errorf("drops %d (%v), want %d", n, err, dropped)
	}
	if n, err := m.Drops(); err != nil || int(n) != dropped {
		t.Errorf("meter: drops %d (%v), want %d", n, err, dropped)
	}
	if a := testing.AllocsPerRun(100, func() { m.Drops() }); a != 0 {
		t.Errorf("a meter's read allocates %v times", a)
	}
	var c Counter
	if got := c.Read([]*net.UDPConn{srv}); got != uint64(dropped) {
		t.Errorf("counter %d, want %d", got, dropped)
	}
	cli.WriteToUDPAddrPort([]byte("x"), to)
	cli.WriteToUDPAddrPort(end, to)
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := srv.ReadFromUDPAddrPort(buf); err != nil {
		t.Fatal(err)
	}
	if got := c.Read([]*net.UDPConn{srv}); got != uint64(dropped+1) {
		t.Errorf("counter after one more drop %d, want %d", got, dropped+1)
	}
}

// TestCounterWraps: a kernel count that wrapped past 2^32 still adds
// what was dropped.
func TestCounterWraps(t *testing.T) {
	srv := udptest.Listen(t, "127.0.0.1")
	c := Counter{last: map[*net.UDPConn]uint32{srv: 0xFFFFFFFE}, total: 10}
	if got := c.Read([]*net.UDPConn{srv}); got != 12 { // 0xFFFFFFFE → 0: two more
		t.Errorf("total %d, want 12", got)
	}
}

// TestLongShapeRefused: a shape whose jumps cannot reach its end is an
// error, not a wrong program.
func TestLongShapeRefused(t *testing.T) {
	var s Shape
	for i := range 300 {
		s = append(s, Byte(i, 1))
	}
	if _, err := Program(s); err == nil {
		t.Error("a 600-instruction shape compiled")
	}
}
