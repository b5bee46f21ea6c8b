package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/foyerlobby/foyer/packet/gg2"
)

// slowReader keeps conns connections from local to addr until ctx is
// done, each sending req and reading the answer 16 bytes every 200 ms
// through a small receive buffer: 80 bytes a second. A connection cut or
// answered is opened again.
func slowReader(ctx context.Context, local string, addr netip.AddrPort, req []byte, conns int) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second,
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
		}}
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			buf := make([]byte, 16)
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr.String())
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				stop := context.AfterFunc(ctx, func() { c.Close() })
				c.Write(req)
				for {
					if _, err := c.Read(buf); err != nil {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				stop()
				c.Close()
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// Slow readers cannot deny the lists. Twenty addresses read the GG2 list,
// the legacy list, the status page and the admin pages at 80 bytes a
// second, first each with one connection, then each with as many as the
// listener lets one address hold, long enough to be cut for reading
// slower than the minimum rate and come back; the lists are as large as
// their caps let them be. Meanwhile another client's list queries, legacy
// queries, page loads and scrapes are answered, 95% of them or more. The
// test logs the shares answered.
func TestSlowReadersCannotDenyLists(t *testing.T) {
	webPort := gg2FreePort(t)
	f := gg2Start(t, fmt.Sprintf("legacy_listen = \"127.0.0.1:0\"\nudp_transport = true\n[web]\nlisten = \"127.0.0.1:%d\"", webPort))
	legacyAddr := gg2LegacyAddr(t, f.logs.String)
	web := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), webPort)
	admin := f.adminBase(t)
	adminAddr := netip.MustParseAddrPort(strings.TrimPrefix(admin, "http://"))

	// Lists as large as they get: a thousand servers with long names, of
	// 8 networks, in version 1's legacy list too.
	long := strings.Repeat("FREE SKINS ", 80)
	var regs []gg2Registrant
	for a := range 64 {
		g := gg2GameAt(t, fmt.Sprintf("127.0.%d.%d", 50+a/8, 1+a%8), f.gg2)
		for p := range 16 {
			r := gg2Registration(t, gg2.Counted, gg2.UDP, uint16(20000+p), long, 8, 0)
			r.KeyValues = append(r.KeyValues, gg2.KeyValue{Key: "protocol_id", Value: legacyID(1)})
			regs = append(regs, gg2Registrant{g, r})
		}
	}
	gg2RegisterUntil(t, regs, "the servers registered", func() bool { return f.metrics(t)["foyer_gg2_registered"] == 1024 })
	listQuery := gg2.ListQuery{Lobby: gg2.GG2LobbyUUID}.Append(nil)
	if n := len(tcpQuery(t, f.gg2, listQuery)); n < 200<<10 || n > 256<<10 {
		t.Fatalf("the list is %d bytes", n)
	}

	client := &http.Client{Timeout: 10 * time.Second}
	fetch := func(url string) bool {
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return err == nil && resp.StatusCode == 200
	}
	query := func(to netip.AddrPort, q []byte, parse func([]byte) error) bool {
		c, err := net.DialTimeout("tcp", to.String(), 10*time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(q); err != nil {
			return false
		}
		b, err := io.ReadAll(c)
		return err == nil && parse(b) == nil
	}
	clients := []struct {
		name   string
		to     netip.AddrPort
		req    []byte
		perIP  int // the listener's connections per address
		answer func() bool
	}{
		{"GG2 list", f.gg2, listQuery, 4, func() bool {
			return query(f.gg2, listQuery, func(b []byte) error { _, err := gg2.ParseListReply(b); return err })
		}},
		{"legacy list", legacyAddr, []byte{1}, 4, func() bool {
			return query(legacyAddr, []byte{1}, func(b []byte) error { _, err := parseLegacyReply(b); return err })
		}},
		{"status page", web, []byte("GET /status HTTP/1.1\r\nHost: foyer\r\n\r\n"), 8, func() bool { return fetch("http://" + web.String() + "/status") }},
		{"admin pages", adminAddr, []byte("GET /rooms HTTP/1.1\r\nHost: " + adminAddr.String() + "\r\n\r\n"), 40, func() bool { return fetch(admin + "/metrics") }},
	}
	for _, variant := range []struct {
		name   string
		conns  func(perIP int) int
		rounds int // of one query of each kind, a second apart
	}{
		{"one connection each", func(int) int { return 1 }, 5},
		// Past the 20 s or so that a reader that fell behind needs to be
		// cut: the kernel's buffers take the first 64 KiB at once.
		{"every connection an address may hold", func(perIP int) int { return perIP }, 25},
	} {
		ctx, stop := context.WithCancel(context.Background())
		var readers sync.WaitGroup
		for _, cl := range clients {
			for i := range 20 {
				readers.Go(func() { slowReader(ctx, fmt.Sprintf("127.0.3.%d", i+1), cl.to, cl.req, variant.conns(cl.perIP)) })
			}
		}
		time.Sleep(2 * time.Second) // every reader connected and waiting
		answered := make([]int, len(clients))
		for range variant.rounds {
			for i, cl := range clients {
				if cl.answer() {
					answered[i]++
				}
			}
			time.Sleep(time.Second)
		}
		stop()
		readers.Wait()
		for i, cl := range clients {
			t.Logf("20 slow readers, %s: %s: %d of %d answered", variant.name, cl.name, answered[i], variant.rounds)
			if answered[i] < variant.rounds*95/100 {
				t.Errorf("%s, %s: %d of %d answered", variant.name, cl.name, answered[i], variant.rounds)
			}
		}
	}
	m := f.metrics(t)
	cut := fmt.Sprintf("GG2 %v, legacy %v, web %v, admin %v", m[gg2Drops("slow_reader")], m[gg2Drops("legacy_slow_reader")],
		m[`foyer_web_drops_total{reason="slow_reader"}`], m[`foyer_admin_drops_total{reason="slow_reader"}`])
	t.Logf("slow readers cut: %s; refused for their network: GG2 %v, legacy %v, web %v, admin %v", cut,
		m[gg2Drops("network_conn_limit")], m[gg2Drops("legacy_network_conn_limit")],
		m[`foyer_web_drops_total{reason="network_conn_limit"}`], m[`foyer_admin_drops_total{reason="network_conn_limit"}`])
	for _, series := range []string{gg2Drops("slow_reader"), gg2Drops("legacy_slow_reader"),
		`foyer_web_drops_total{reason="slow_reader"}`, `foyer_admin_drops_total{reason="slow_reader"}`} {
		if m[series] == 0 {
			t.Errorf("no slow reader was cut: %s", cut)
			break
		}
	}
}
