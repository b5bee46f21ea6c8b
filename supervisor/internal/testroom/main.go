// Command testroom is the instance the supervisor's tests launch: a small
// game driven by datagrams, the reference room, instances that misbehave
// in the ways a real one might, and a supervisor host to kill. It is built
// without the race detector, so that a test can start a thousand of them
// quickly; the supervisor side stays under the detector.
//
// Usage: testroom MODE [ARGS]
//
//	game              the test game (see testGame)
//	refroom           the reference room
//	garbage           the test game, with malformed log lines and raw bytes on stdout and stderr
//	garbage-handshake garbage on stdout where the handshake line belongs
//	silent            never answers the handshake
//	gated DIR         the test game, started once DIR/open exists (exits
//	                  3 at once if DIR/fail does)
//	own-bind          the test game, blind to the socket its host passes,
//	                  as a room program that binds its own port
//	hang-stop         the test game, whose Stop never returns, ignoring SIGTERM
//	host N PORT DRIVER
//	                  a supervisor of N rooms on ports from PORT, game
//	                  instances (DRIVER "plugin") or tee servers ("exec"):
//	                  prints "pid P" per room, then "ready", then waits to
//	                  be killed
//	tee PORT MAX      a foreign server answering Teeworlds info requests
//	                  (see teeServer), for the exec driver
//	keep --probe P -- COMMAND...
//	                  the keeper of a foreign server, as foyer's instance
//	                  subcommand runs it
package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/instance/instancepb"
	"github.com/foyerlobby/foyer/instance/keeper"
	"github.com/foyerlobby/foyer/instance/refroom"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/supervisor"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testroom MODE [ARGS]")
		os.Exit(2)
	}
	switch mode := os.Args[1]; mode {
	case "game":
		instance.Serve(&testGame{})
	case "refroom":
		instance.Serve(refroom.New(zerolog.New(os.Stderr)))
	case "garbage":
		spew(os.Stderr) // stdout carries the handshake until Serve
		instance.Serve(&testGame{garbage: true})
	case "garbage-handshake":
		os.Stdout.WriteString("this is not a handshake\n\x00\xff{\n")
		instance.Serve(&testGame{})
	case "gated":
		gate(os.Args[2])
		instance.Serve(&testGame{})
	case "own-bind":
		os.Unsetenv(instancepb.EnvRoomSocket)
		instance.Serve(&testGame{})
	case "silent":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		time.Sleep(time.Hour)
	case "hang-stop":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		instance.Serve(&testGame{hangStop: true})
	case "host":
		os.Exit(host(os.Args[2:]))
	case "tee":
		os.Exit(teeServer(os.Args[2:]))
	case "keep":
		cfg, err := keeper.Parse(os.Args[2:])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		k, err := keeper.New(cfg, zerolog.New(os.Stderr), os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		instance.Serve(k)
	default:
		fmt.Fprintf(os.Stderr, "testroom: unknown mode %q\n", mode)
		os.Exit(2)
	}
}

// gate waits until dir/open exists, and exits with code 3 at once if
// dir/fail does.
func gate(dir string) {
	for {
		if _, err := os.Stat(dir + "/fail"); err == nil {
			os.Exit(3)
		}
		if _, err := os.Stat(dir + "/open"); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// spew writes what a broken game might to each of files: log lines
// go-plugin's hclog parser chokes on, binary junk and an overlong line.
func spew(files ...*os.File) {
	junk := []string{
		`{"@message":123}`, `{"@level":{"x":1},"@timestamp":[]}`, `{"@message":null,"@module":7}`,
		"\x00\x01\x02\xff\xfe", "{", strings.Repeat("A", 70_000),
	}
	for _, f := range files {
		for _, j := range junk {
			f.WriteString(j + "\n")
		}
	}
}

// testGame is a minimal game driven by datagrams, each answered "ok":
//
//	hello      reports a player connected from the sender's IP
//	bye        reports that player gone
//	state N    reports state N
//	exit N     exits with code N
type testGame struct {
	garbage, hangStop bool
	r                 instance.Reporter
}

func (g *testGame) Start(ctx context.Context, a instance.Assignment, conn net.PacketConn, r instance.Reporter) error {
	g.r = r
	go g.serve(conn)
	if g.garbage {
		g.spew()
	}
	return nil
}

func (g *testGame) serve(conn net.PacketConn) {
	buf := make([]byte, 512)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			return
		}
		ip := from.(*net.UDPAddr).AddrPort().Addr().Unmap()
		cmd, arg, _ := strings.Cut(string(buf[:n]), " ")
		num, _ := strconv.Atoi(arg)
		conn.WriteTo([]byte("ok"), from) // first: "exit" leaves no time after
		switch cmd {
		case "hello":
			g.r.PlayerConnected(ip)
		case "bye":
			g.r.PlayerDisconnected(ip)
		case "state":
			g.r.SetState(packet.RoomState(num))
		case "exit":
			os.Exit(num)
		}
		if g.garbage {
			g.spew()
		}
	}
}

// spew writes garbage to the process's real stdout and stderr, which Serve
// took over, and to what Serve put in their place.
func (g *testGame) spew() {
	spew(os.NewFile(1, "stdout"), os.NewFile(2, "stderr"), os.Stdout, os.Stderr)
}

func (g *testGame) Stop(ctx context.Context) error {
	if g.hangStop {
		select {}
	}
	return nil
}

// host stands in for a lobby in the parent-death test. Its rooms are
// game instances (driver "plugin") or tee servers run by the exec driver
// ("exec").
func host(args []string) int {
	if len(args) != 3 {
		fmt.Println("error: host N PORT DRIVER")
		return 2
	}
	n, _ := strconv.Atoi(args[0])
	first, _ := strconv.Atoi(args[1])
	exe, err := os.Executable()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	cfg := supervisor.DefaultConfig()
	cfg.FirstPort, cfg.LastPort, cfg.MaxInstances = uint16(first), uint16(first+n-1), n
	cfg.Command = []string{exe, "game"}
	if args[2] == "exec" {
		cfg.Command, cfg.Probe, cfg.Keeper = []string{exe, "tee", "{port}", "8"}, "teeworlds", []string{exe, "keep"}
	}
	s, err := supervisor.New(cfg, zerolog.Nop())
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Go(func() {
			r, err := s.Table().Create(context.Background(), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(10000+i)))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fmt.Println("error", err)
				return
			}
			fmt.Println("pid", r.PID)
		})
	}
	wg.Wait()
	fmt.Println("ready")
	select {}
}
