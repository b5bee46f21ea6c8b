// Command loadbench is the benchmarks' load generator and echo servers, as
// processes of their own, so that a server under test (the real foyer
// binary) and its baselines are measured from outside, each with its own
// CPU time. It is a test tool: nothing ships it.
//
//	loadbench echo [-batched] [-listen ADDR] [-size TYPE=LEN ...]
//	    serve a UDP echo (one datagram per system call, or recvmmsg and
//	    sendmmsg with -batched), each echo zero-padded to LEN bytes when
//	    the request's type (its second byte, in hex) is TYPE, as long as
//	    the server's answer it stands in for; print the bound address on
//	    a line, then serve until stdin closes
//	loadbench load -target ADDR -sources IP,IP,... -window N -duration D
//	    -timeout D -request HEX [-request HEX ...]
//	    run loadtest.Window and print its result as JSON
//	loadbench flood -target ADDR -datagram HEX
//	    send the datagram to ADDR as fast as one thread can, in batches of
//	    64 per system call, until stdin closes; then print how many it sent
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/foyerlobby/foyer/lobby/internal/loadtest"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: loadbench echo|load|flood [flags]")
	}
	var err error
	switch os.Args[1] {
	case "echo":
		err = echo(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	case "flood":
		err = flood(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "loadbench:", msg)
	os.Exit(2)
}

func echo(args []string) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	batched := fs.Bool("batched", false, "recvmmsg/sendmmsg, 16 datagrams per call")
	listen := fs.String("listen", "127.0.0.1:0", "UDP address to serve")
	sizes := replySizes{}
	fs.Var(sizes, "size", "TYPE=LEN: echo requests of type TYPE (hex) LEN bytes long (repeated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(*listen)
	if err != nil {
		return err
	}
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		return err
	}
	fmt.Println(c.LocalAddr())
	serve := loadtest.Echo
	if *batched {
		serve = loadtest.EchoBatched
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the parent is gone, or done
		c.Close()
	}()
	serve(c, sizes.of)
	return nil
}

// replySizes is a repeated -size flag: how long an echo is, by the
// request's type.
type replySizes map[byte]int

func (r replySizes) String() string { return fmt.Sprint(map[byte]int(r)) }

func (r replySizes) Set(s string) error {
	typ, length, ok := strings.Cut(s, "=")
	t, err := strconv.ParseUint(typ, 16, 8)
	if err != nil || !ok {
		return fmt.Errorf("%q is not TYPE=LEN, TYPE a byte in hex", s)
	}
	n, err := strconv.Atoi(length)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: LEN is not a length", s)
	}
	r[byte(t)] = n
	return nil
}

// of is how long a -size says the echo of req is, 0 if none does (the
// echo is then as long as req: see loadtest.Echo).
func (r replySizes) of(req []byte) int {
	if len(req) < 2 {
		return 0
	}
	return r[req[1]]
}

// requests is a repeated -request flag.
type requests [][]byte

func (r *requests) String() string { return fmt.Sprint(len(*r), " requests") }

func (r *requests) Set(s string) error {
	b, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	*r = append(*r, b)
	return nil
}

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var cfg loadtest.WindowConfig
	var mix requests
	target := fs.String("target", "", "the server's UDP address")
	sources := fs.String("sources", "127.0.0.1", "comma-separated local addresses, one socket each: IP, or IP:PORT for a fixed port")
	fs.IntVar(&cfg.Window, "window", 16, "requests outstanding per socket")
	fs.DurationVar(&cfg.Duration, "duration", time.Second, "length of the run")
	fs.DurationVar(&cfg.Timeout, "timeout", 200*time.Millisecond, "a request unanswered this long is lost")
	fs.Var(&mix, "request", "a request, hex-encoded (compact framing); repeat for a mix sent in turn")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if cfg.Target, err = netip.ParseAddrPort(*target); err != nil {
		return fmt.Errorf("-target: %w", err)
	}
	for _, s := range strings.Split(*sources, ",") {
		ap, err := netip.ParseAddrPort(s)
		if ip, ierr := netip.ParseAddr(s); ierr == nil {
			ap, err = netip.AddrPortFrom(ip, 0), nil
		}
		if err != nil {
			return fmt.Errorf("-sources: %w", err)
		}
		cfg.Sources = append(cfg.Sources, ap)
	}
	cfg.Mix = mix
	res, err := loadtest.Window(context.Background(), cfg)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func flood(args []string) error {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	target := fs.String("target", "", "the server's UDP address")
	datagram := fs.String("datagram", "", "the datagram, hex-encoded")
	if err := fs.Parse(args); err != nil {
		return err
	}
	to, err := netip.ParseAddrPort(*target)
	if err != nil {
		return fmt.Errorf("-target: %w", err)
	}
	d, err := hex.DecodeString(*datagram)
	if err != nil {
		return fmt.Errorf("-datagram: %w", err)
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
	if err != nil {
		return err
	}
	defer c.Close()
	var done atomic.Bool
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the parent is done
		done.Store(true)
	}()
	batch := make([]ipv4.Message, 64)
	for i := range batch {
		batch[i].Buffers = [][]byte{d}
	}
	pc := ipv4.NewPacketConn(c)
	sent := 0
	for !done.Load() {
		n, _ := pc.WriteBatch(batch, 0) // a refused send (nothing listening yet) is retried
		sent += max(n, 0)
	}
	fmt.Println(sent)
	return nil
}
