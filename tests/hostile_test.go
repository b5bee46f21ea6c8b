package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/foyertest"
	"github.com/foyerlobby/foyer/internal/floodtest"
	"github.com/foyerlobby/foyer/internal/limit"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/internal/udptest"
	"github.com/foyerlobby/foyer/packet/gg2"
)

// gg2GameAt is a game server registering from ip.
func gg2GameAt(t *testing.T, ip string, to netip.AddrPort) *gg2Game {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &gg2Game{t: t, conn: c, to: to}
}

// A native client is sent to the lobby's address at the port it is given:
// a server registered from another address is not offered to it (else a
// forged registration would send players anywhere on the lobby's host),
// while GG2 browsers, which get addresses, still list it. A server on the
// lobby's own host is offered once its port answered.
func TestNativeListOffersOnlyReachableRooms(t *testing.T) {
	f := gg2Start(t, "")
	accepts := make(chan uint16, 8)
	plantedPort := acceptingTCPAt(t, "127.0.0.2", accepts)
	elsewhere := gg2Registration(t, gg2.Counted, gg2.TCP, plantedPort, "planted", 8, 0)
	gg2GameAt(t, "127.0.0.2", f.gg2).register(elsewhere)
	planted := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), plantedPort)
	gg2Eventually(t, "the planted server in the GG2 list, at its own address", func() bool {
		for _, s := range gg2List(t, f.gg2, gg2.GG2LobbyUUID).Servers {
			if s.V4 == planted {
				return true
			}
		}
		return false
	})
	herePort := acceptingTCP(t, accepts)
	here := gg2Registration(t, gg2.Counted, gg2.TCP, herePort, "same host", 8, 0)
	gg2GameAt(t, "127.0.0.1", f.gg2).register(here)
	c := newClient(t, "127.0.0.1", f.lobby)
	var seq seqs
	var listed []room
	gg2Eventually(t, "the same-host server in the native list", func() bool {
		listed = nativeAt(c.list(seq.next()), herePort)
		return len(listed) == 1
	})
	if planted := nativeAt(c.list(seq.next()), plantedPort); len(planted) != 0 {
		t.Fatalf("a server registered from 127.0.0.2 is offered at 127.0.0.1: %+v", planted)
	}
	// Registered one after the other, the planted server has the id just
	// before the same-host one.
	if r := c.request(compact, joinRoom, seq.next(), joinPayload(listed[0].id-1)); r.typ != joinFailed {
		t.Fatalf("JOIN of the planted server answered %#x", r.typ)
	}
	if r := c.request(compact, joinRoom, seq.next(), joinPayload(listed[0].id)); r.typ != joinSuccess {
		t.Fatalf("JOIN of the same-host server answered %#x", r.typ)
	}
}

// A retry is the same request again: the same sequence number for another
// room is a new JOIN, answered for that room.
func TestSameSequenceAnotherRoomIsANewJoin(t *testing.T) {
	s := startServer(t, "", "")
	c := newClient(t, "127.0.0.1", s.lobby)
	a, portA := c.request(compact, createRoom, 1, nil).roomPort(t)
	b, portB := c.request(compact, createRoom, 2, nil).roomPort(t)
	j := newClient(t, "127.0.0.1", s.lobby)
	if id, port := j.request(compact, joinRoom, 0, joinPayload(a)).roomPort(t); id != a || port != portA {
		t.Fatalf("JOIN room %d answered room %d port %d", a, id, port)
	}
	if id, port := j.request(compact, joinRoom, 0, joinPayload(b)).roomPort(t); id != b || port != portB {
		t.Fatalf("JOIN room %d with the same sequence answered room %d port %d (room %d's reply)", b, id, port, a)
	}
}

// Forged JOINs, each from another address, hold seats for replies that go
// nowhere. A real player, who lists the rooms and joins with the id it was
// shown, still gets a seat nearly every time, at 5 and at 100 forged JOINs
// a second. Seats last 1 s here, so the forgers keep the 4-seat room full
// and each of the player's tries needs a seat of its own.
func TestForgedJoinsCannotHogSeats(t *testing.T) {
	requiretest.RawSocket(t) // forged datagrams
	for _, rate := range []int{5, 100} {
		t.Run(strconv.Itoa(rate)+"/s", func(t *testing.T) {
			t.Parallel()
			s := startServer(t, "", `seat_ttl = "1s"`)
			creator := newClient(t, "127.0.0.1", s.lobby)
			id, port := creator.request(compact, createRoom, 1, nil).roomPort(t)
			// The creator comes to its room, which a room nobody came
			// to would not outlive its seat.
			if _, err := newGamer(t, "creator", compact, netip.AddrPortFrom(s.lobby.Addr(), port)).greetCompact(id, 4); err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() {
				if _, err := floodtest.Run(ctx, floodtest.Config{To: s.lobby, Payload: encode(compact, joinRoom, 7, 0, joinPayload(id)),
					Sources: 1 << 20, Rate: rate}); err != nil {
					t.Error(err)
				}
			})
			defer func() { stop(); wg.Wait() }()
			time.Sleep(2 * time.Second) // the forgers fill the room
			const tries = 20
			ok := 0
			for i := range tries {
				p := newClient(t, "127.0.0.1", s.lobby) // a fresh player each time
				var listedID uint32
				for _, r := range p.list(uint16(i)) {
					if r.port == port {
						listedID = r.id
					}
				}
				if r := p.request(compact, joinRoom, uint16(i), joinPayload(listedID)); r.typ == joinSuccess {
					ok++
				}
				time.Sleep(1100 * time.Millisecond) // this try's seat expires
			}
			if ok < tries*95/100 {
				t.Fatalf("the real player got a seat %d times of %d, under %d forged JOINs a second", ok, tries, rate)
			}
		})
	}
}

// A flood of forged requests from a million addresses: a client that was
// talking to the lobby before keeps being answered, the forged addresses
// get next to no replies, and the lobby's memory stays bounded. A forged
// address is answered only if it was admitted, so the lists sent are
// bounded by admission (admit_burst, then admit_rate a second), however
// fast the flood runs on the machine at hand.
func TestForgedFloodLeavesEstablishedClientsServed(t *testing.T) {
	requiretest.RawSocket(t) // forged datagrams
	l := cliLobby(t, foyertest.Admin(netip.MustParseAddrPort("127.0.0.1:0")))
	base := "http://" + l.AdminAddr().String()
	c := newClient(t, "127.0.0.1", l.Addr())
	for i := range 5 { // established before the flood
		c.list(uint16(i))
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var sent uint64
	began := time.Now()
	wg.Go(func() {
		var err error
		if sent, err = floodtest.Run(ctx, floodtest.Config{To: l.Addr(), Payload: encode(compact, listRooms, 9, 0, nil),
			Sources: 1_000_000, Rate: 100_000}); err != nil {
			t.Error(err)
		}
	})
	const asked = 200
	answered := 0
	for i := range asked {
		if _, err := c.exchange(compact, listRooms, uint16(100+i), nil); err == nil {
			answered++
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	wg.Wait()
	m := adminMetrics(t, base)
	flooded := time.Since(began) // queued datagrams are admitted until the metrics are read
	rss := residentBytes(t, l.PID())
	if answered < asked*9/10 {
		t.Errorf("the established client got %d answers of %d", answered, asked)
	}
	if m[`foyer_lobby_drops_total{reason="unadmitted"}`] == 0 {
		t.Error("no forged request was refused admission")
	}
	def := limit.DefaultConfig()
	admissible := float64(def.AdmitBurst) + def.AdmitRate*flooded.Seconds()
	t.Logf("flood of %d datagrams in %v: %d of %d legitimate LISTs answered; %v room lists sent (at most %.0f sources admitted); %v unadmitted; RSS %d MiB",
		sent, flooded, answered, asked, m[`foyer_lobby_replies_total{type="room_list"}`], admissible, m[`foyer_lobby_drops_total{reason="unadmitted"}`], rss>>20)
	if float64(sent) < 4*admissible {
		t.Fatalf("%d forged requests in %v: too few to tell a reflecting lobby from one that admits %.0f sources", sent, flooded, admissible)
	}
	if replies := m[`foyer_lobby_replies_total{type="room_list"}`]; replies > float64(asked+5)+admissible {
		t.Errorf("%v lists sent for %d forged and %d real requests in %v, past the %d real ones and %.0f admitted sources: the lobby reflects",
			replies, sent, asked, flooded, asked+5, admissible)
	}
	if rss > 128<<20 {
		t.Errorf("resident memory %d MiB after the flood, bound 128 MiB", rss>>20)
	}
}

// A flood from a million forged sources reaches the bounds the lobby
// keeps against it, and the lobby holds them: the source table fills to
// max_sources (the default, 100,000) and grows no further; the replies to
// sources first seen under the flood stay within unverified_reply_limit,
// which they reach; and foyer serve stays under 128 MiB resident. Two
// budgets differ from the defaults, to keep the test short: admit_rate
// (2,000 new sources a second, which would take 50 s to fill the table)
// is 20,000, still a fraction of what the flood sends, so that the lobby
// knows it is flooded throughout; and unverified_reply_limit is 64 KiB a
// second, below what 20,000 new sources a second ask (at 1 MiB it takes
// 75,000 forged requests a second to reach, more than a loaded two-core
// machine both sends and reads).
func TestForgedMillionSourcesMeetTheBounds(t *testing.T) {
	requiretest.RawSocket(t) // forged datagrams
	const (
		maxSources = 100_000 // the default
		admitRate  = 20_000
		admitBurst = 4096 // the default
		replyLimit = 64 << 10
		forged     = 1_000_000
		floodRate  = 250_000   // datagrams a second, at most
		emptyList  = 8 + 2 + 4 // a ROOM_LIST of no room: header, count, CRC
	)
	s := startServer(t, fmt.Sprintf("admit_rate = %d\nunverified_reply_limit = %d\n", admitRate, replyLimit), "")
	before := s.metrics(t)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var sent uint64
	start := time.Now()
	flooded := make(chan struct{})
	wg.Go(func() {
		defer close(flooded)
		var err error
		// Each source sends once, at most floodRate a second, so that the
		// flood outlasts the filling of the table (max_sources at
		// admit_rate, 5 s) however fast the machine sends.
		if sent, err = floodtest.Run(ctx, floodtest.Config{To: s.lobby, Payload: encode(compact, listRooms, 9, 0, nil),
			Sources: 2 * forged, Rate: floodRate, Once: true}); err != nil {
			t.Error(err)
		}
	})
	// Sources are admitted as known ones (their replies not charged to
	// the unverified budget) until the lobby knows it is flooded.
	for m := s.metrics(t); m["foyer_guard_under_pressure"] != 1; m = s.metrics(t) {
		if time.Since(start) > 10*time.Second {
			stop()
			wg.Wait()
			t.Fatal("the lobby never knew it was flooded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	known := time.Since(start)
	// Until the lobby has read a million forged requests and filled its
	// table (or the flood is over, or a minute has passed: the checks
	// below say which did not happen). The flood has two million sources,
	// and sends each once: every request the lobby reads comes from a
	// source it has not seen.
	read := func(m map[string]float64) float64 {
		return m[`foyer_lobby_requests_total{type="list"}`] - before[`foyer_lobby_requests_total{type="list"}`]
	}
wait:
	for m := s.metrics(t); (read(m) < forged || m["foyer_lobby_sources"] < maxSources) && time.Since(start) < time.Minute; m = s.metrics(t) {
		select {
		case <-flooded:
			break wait
		case <-time.After(500 * time.Millisecond):
		}
	}
	stop()
	wg.Wait()
	time.Sleep(quiet) // what the socket still held is read and answered
	m := s.metrics(t)
	elapsed := time.Since(start)
	rss := residentBytes(t, s.cmd.Process.Pid)
	replies := m[`foyer_lobby_replies_total{type="room_list"}`] - before[`foyer_lobby_replies_total{type="room_list"}`]
	// The replies the flood could get: one to each source admitted before
	// the lobby knew it was flooded (as many as the admission budget let
	// in by then), and then what the unverified budget lets through in the
	// time, its burst included.
	budget := admitBurst + admitRate*known.Seconds() +
		(float64(replyLimit)*elapsed.Seconds()+float64(max(replyLimit, limit.MaxDatagram)))/emptyList
	t.Logf("%d datagrams sent, each from a source of its own, in %v (flood known after %v); the lobby read %.0f, admitted %.0f sources, held back %.0f replies and sent %.0f (budget %.0f); RSS %d MiB",
		sent, elapsed.Round(time.Millisecond), known.Round(time.Millisecond), read(m), m["foyer_lobby_sources"], m["foyer_guard_unverified_replies_dropped_total"], replies, budget, rss>>20)
	if read(m) < forged {
		t.Errorf("the lobby read %.0f forged requests in %v, want %d", read(m), elapsed, forged)
	}
	if got := m["foyer_lobby_sources"]; got != maxSources {
		t.Errorf("%.0f sources in the table after %d forged ones, want the bound, %d", got, forged, maxSources)
	}
	if m["foyer_guard_unverified_replies_dropped_total"] == 0 {
		t.Error("no reply held back: the flood never reached unverified_reply_limit")
	}
	if replies > budget {
		t.Errorf("%.0f replies (%.0f bytes) to the flood in %v, past the %d bytes a second of unverified_reply_limit (at most %.0f replies)",
			replies, replies*emptyList, elapsed, replyLimit, budget)
	}
	if rss > 128<<20 {
		t.Errorf("resident memory %d MiB after %d forged sources, bound 128 MiB", rss>>20, forged)
	}
}

// residentBytes reads a process's resident set size.
func residentBytes(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// The admin pages are for whoever runs the host: off loopback they need a
// bearer token, and without one the start is refused.
func TestAdminOffLoopbackNeedsAToken(t *testing.T) {
	open := exec.Command(bin, "serve", "--config", readyConfig(t, "[lobby]\nlisten = \"127.0.0.1:0\"\n[admin]\nlisten = \"0.0.0.0:0\"\n"))
	out, err := open.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs token or token_file") {
		t.Fatalf("an admin listener on every address without a token started (%v):\n%s", err, out)
	}
	const token = "a-long-enough-admin-token-of-32-chars"
	cmd := exec.Command(bin, "serve", "--ready-json", "--config",
		readyConfig(t, "[lobby]\nlisten = \"127.0.0.1:0\"\n[admin]\nlisten = \"0.0.0.0:0\"\ntoken = \""+token+"\"\n"))
	s, ready, _, _ := readyServeJSON(t, cmd)
	url := "http://" + netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ready.Admin.Port()).String() + "/rooms"
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer wrong-token-of-some-length", 401}, {"Basic " + token, 401}, {"Bearer " + token, 200}} {
		req, _ := http.NewRequest("GET", url, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET /rooms with %q: %d, want %d", c.auth, resp.StatusCode, c.want)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	s.wait(t)
}

// A denied source gets nothing from any edge: native LIST, GunZ, the GG2
// list and registration, the public page. Everyone else is served.
func TestDeniedSourceGetsNothing(t *testing.T) {
	gg2Port, webPort, gunzPort := gg2FreePort(t), gg2FreePort(t), freeUDPPort(t)
	s := startServer(t, gg2Limits+"\ndeny = [\"127.0.0.3\", \"127.0.9.0/24\"]", fmt.Sprintf(
		"\n[gg2]\nenabled = true\nlisten = \"127.0.0.1:%d\"\nlegacy_listen = \"\"\nudp_transport = true\n[gunz]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n[web]\nlisten = \"127.0.0.1:%d\"\n",
		gg2Port, gunzPort, webPort))
	gg2Addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), gg2Port)
	for _, ip := range []string{"127.0.0.3", "127.0.9.77"} {
		// Native and GunZ: no reply.
		c := newClient(t, ip, s.lobby)
		c.send(encode(compact, listRooms, 1, 0, nil))
		if r, ok := c.recv(quiet); ok {
			t.Errorf("%s: native LIST answered %#x", ip, r.typ)
		}
		u := newClient(t, ip, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(gunzPort)))
		u.send(gunzHex(t, gunzSeedRequest))
		if b, err := udptest.Read(u.conn, u.to, quiet); err != nil || b != nil {
			t.Errorf("%s: GunZ answered %x (%v)", ip, b, err)
		}
		// TCP: the connection is closed with nothing written.
		for name, port := range map[string]int{"GG2 list": int(gg2Port), "status page": int(webPort)} {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
			conn, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				continue // refused outright is as good
			}
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(conn, "GET /status HTTP/1.0\r\n\r\n")
			b, _ := io.ReadAll(conn)
			conn.Close()
			if len(b) != 0 {
				t.Errorf("%s: %s answered %q", ip, name, b)
			}
		}
		// A registration from a denied source is not listed.
		gg2GameAt(t, ip, gg2Addr).register(gg2Registration(t, gg2.Counted, gg2.UDP, 9990, "denied", 8, 0))
	}
	// Everyone else is served, and sees no server from a denied source.
	ok := newClient(t, "127.0.0.1", s.lobby)
	ok.list(2)
	gg2GameAt(t, "127.0.0.1", gg2Addr).register(gg2Registration(t, gg2.Counted, gg2.UDP, 9991, "allowed", 8, 0))
	gg2Eventually(t, "the allowed server listed", func() bool {
		return len(gg2At(gg2List(t, gg2Addr, gg2.GG2LobbyUUID), 9991)) == 1
	})
	for _, srv := range gg2List(t, gg2Addr, gg2.GG2LobbyUUID).Servers {
		if srv.V4.Port() == 9990 {
			t.Errorf("a server registered from a denied source is listed: %+v", srv)
		}
	}
	if resp, _ := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/status", webPort)); resp.StatusCode != 200 {
		t.Errorf("status page for an allowed source: %d", resp.StatusCode)
	}
}

// A room-id file left empty, cut short or overwritten by a crash or a
// hand does not stop the start: it is reported, ids come from the clock
// (above any id of an earlier run that made under a room a second), and a
// good mark replaces it. Seats, which remote traffic takes, are counted
// and logged at debug level only, never one info line each.
func TestDamagedIDFileIsRecovered(t *testing.T) {
	for name, content := range map[string]string{"empty": "", "truncated": "4", "garbage": "\x00\xffnot a number\n"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "ids")
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			clock := uint32(time.Now().Unix())
			s := startServer(t, "", fmt.Sprintf("id_file = %q", file))
			c := newClient(t, "127.0.0.1", s.lobby)
			id, _ := c.request(compact, createRoom, 1, nil).roomPort(t)
			if id < clock {
				t.Errorf("room id %d, below the clock seed %d", id, clock)
			}
			warned := len(s.logs.lines("room id mark unreadable, ids seeded from the clock"))
			if want := map[bool]int{true: 0, false: 1}[name == "truncated"]; warned != want {
				t.Errorf("%d warnings about the unreadable mark, want %d", warned, want)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if mark, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32); err != nil || uint32(mark) < id {
				t.Errorf("id file holds %q after the start, want a mark at or above room %d", b, id)
			}

			before := s.metrics(t)["foyer_supervisor_seats_held_total"]
			const players = 3
			for i := range players {
				newClient(t, fmt.Sprintf("127.0.8.%d", i+1), s.lobby).request(compact, joinRoom, uint16(i), joinPayload(id)).roomPort(t)
			}
			if held := s.metrics(t)["foyer_supervisor_seats_held_total"] - before; held != players {
				t.Errorf("%v seats counted for %d JOINs", held, players)
			}
			// The lobby logs at debug level here, so each seat has its
			// line; the log comes through a pipe and may lag.
			var joined []map[string]any
			for deadline := time.Now().Add(5 * time.Second); len(joined) < players && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				joined = s.logs.lines("room joined")
			}
			if len(joined) != players {
				t.Errorf("%d seat lines for %d JOINs", len(joined), players)
			}
			for _, m := range joined {
				if m["level"] != "debug" {
					t.Errorf("a seat logged at %v", m["level"])
				}
			}
		})
	}
}
