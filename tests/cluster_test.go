package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/foyerlobby/foyer/internal/logtest"
	"github.com/foyerlobby/foyer/internal/requiretest"
	"github.com/foyerlobby/foyer/internal/udptest"
)

// The cluster tests run real `foyer serve` hosts, each in a network
// namespace of its own with its own IP, a real NATS server (Debian's) or
// the embedded one, and a client in a namespace of its own that reaches
// the hosts through a forwarder holding the one public address: the
// deployment docs/cluster.md describes. Every address is on networks that
// exist only inside the namespaces; nothing is sent anywhere else.
//
//	client 10.215.0.2 ── 10.215.0.1 forwarder (nft DNAT) 10.214.0.254 ── bridge ── hosts 10.214.0.1-4, NATS 10.214.0.10

var (
	clusterBack   = netip.MustParsePrefix("10.214.0.0/24")
	clusterPublic = netip.MustParseAddr("10.215.0.1")
	clusterClient = netip.MustParseAddr("10.215.0.2")
	clusterRouter = netip.MustParseAddr("10.214.0.254")
	clusterNATS   = netip.MustParseAddr("10.214.0.10")
)

// clusterLobbyPort is every host's lobby port, and the forwarded one.
const clusterLobbyPort = 7777

// clusterWait bounds every wait for something that must happen: a guard
// against hangs, never a measure (the times are logged, and measured by
// the benchmarks).
const clusterWait = 40 * time.Second

// clusterNet is the test's namespaces: a forwarder with a bridge for the
// hosts' network, the hosts, NATS, and the client on the public side.
type clusterNet struct {
	t   *testing.T
	tag string
	fwd string // the forwarder's namespace
	// client is the players' namespace, routed through the forwarder.
	client string
}

// backIP is the address of member i (1-based) of the hosts' network.
func backIP(i int) netip.Addr {
	a := clusterBack.Addr().As4()
	a[3] = byte(i)
	return netip.AddrFrom4(a)
}

func (cn *clusterNet) run(argv ...string) { cn.t.Helper(); lanRun(cn.t, argv...) }

// newClusterNet makes the forwarder, its bridge and the client. It
// requires network namespaces: make test, which CI runs, has them.
func newClusterNet(t *testing.T) *clusterNet {
	t.Helper()
	requiretest.Netns(t)
	cn := &clusterNet{t: t, tag: fmt.Sprintf("fc%d%03x", os.Getpid()%10000, rand.IntN(1<<12))}
	cn.fwd = cn.namespace("f")
	cn.run("ip", "-n", cn.fwd, "link", "add", "br0", "type", "bridge")
	cn.run("ip", "-n", cn.fwd, "addr", "add", netip.PrefixFrom(clusterRouter, 24).String(), "dev", "br0")
	cn.run("ip", "-n", cn.fwd, "link", "set", "br0", "up")
	cn.run("ip", "netns", "exec", cn.fwd, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	cn.client = cn.namespace("k")
	cn.link(cn.client, "k", clusterPublic, clusterClient, clusterPublic, "")
	return cn
}

// namespace makes a namespace named after the test's tag, deleted at the
// end of the test.
func (cn *clusterNet) namespace(suffix string) string {
	ns := cn.tag + suffix
	cn.run("ip", "netns", "add", ns)
	cn.t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	cn.run("ip", "-n", ns, "link", "set", "lo", "up")
	return ns
}

// link joins ns to the forwarder with a veth pair: fwdIP on the
// forwarder's end (or its end on bridge), ip on ns's end, with a default
// route via gw.
func (cn *clusterNet) link(ns, id string, fwdIP, ip, gw netip.Addr, bridge string) {
	outer, inner := cn.tag+id+"0", cn.tag+id+"1"
	cn.run("ip", "-n", cn.fwd, "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
	if bridge != "" {
		cn.run("ip", "-n", cn.fwd, "link", "set", outer, "master", bridge)
	} else {
		cn.run("ip", "-n", cn.fwd, "addr", "add", netip.PrefixFrom(fwdIP, 24).String(), "dev", outer)
	}
	cn.run("ip", "-n", cn.fwd, "link", "set", outer, "up")
	cn.run("ip", "-n", ns, "addr", "add", netip.PrefixFrom(ip, 24).String(), "dev", inner)
	cn.run("ip", "-n", ns, "link", "set", inner, "up")
	cn.run("ip", "-n", ns, "route", "add", "default", "via", gw.String())
}

// member makes a namespace on the hosts' network at ip.
func (cn *clusterNet) member(id string, ip netip.Addr) string {
	ns := cn.namespace(id)
	cn.link(ns, id, netip.Addr{}, ip, clusterRouter, "br0")
	return ns
}

// setLink cuts or restores member id's link at the forwarder's end: the
// member keeps its address and routes, and hears nothing.
func (cn *clusterNet) setLink(id string, up bool) {
	state := "down"
	if up {
		state = "up"
	}
	cn.run("ip", "-n", cn.fwd, "link", "set", cn.tag+id+"0", state)
}

// forward installs the forwarder's DNAT rules: the public lobby port to
// lobby, and each host's port range to it.
func (cn *clusterNet) forward(lobby netip.Addr, hosts []*clusterHost) {
	cn.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "table ip foyer {\n\tchain pre {\n\t\ttype nat hook prerouting priority dstnat;\n")
	fmt.Fprintf(&b, "\t\tip daddr %v udp dport %d dnat to %v\n", clusterPublic, clusterLobbyPort, lobby)
	for _, h := range hosts {
		fmt.Fprintf(&b, "\t\tip daddr %v udp dport %d-%d dnat to %v\n", clusterPublic, h.first, h.first+9, h.ip)
	}
	b.WriteString("\t}\n}\n")
	cmd := exec.Command("ip", "netns", "exec", cn.fwd, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		cn.t.Fatalf("nft: %v\n%s\n%s", err, out, b.String())
	}
}

// inNetns runs f on an OS thread moved into namespace ns; sockets f makes
// stay in ns. The thread is never unlocked: it ends with its goroutine.
func inNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// udpIn opens a UDP socket in namespace ns, closed at the end of the test.
func udpIn(t testing.TB, ns string) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := inNetns(ns, func() (err error) { c, err = net.ListenUDP("udp4", nil); return err }); err != nil {
		t.Fatalf("udp socket in %s: %v", ns, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// clusterHost is one `foyer serve` of the cluster, in its namespace.
type clusterHost struct {
	name   string
	ns     string
	ip     netip.Addr
	first  uint16 // first port of its rooms; ten of them
	config string
	http   *http.Client // reaches its admin pages, on its loopback

	cmd  *exec.Cmd
	log  *logtest.Buffer
	done chan struct{}
	err  error
}

// hostConfig is a host's config.toml: small rooms that play a match of
// two seconds with one player, long-lived seats and idle rooms (so nothing
// leaves the lists of itself while the test looks), generous limits.
func hostConfig(h *clusterHost, cluster string) string {
	return fmt.Sprintf(`[lobby]
listen = "0.0.0.0:%d"
rate = 1000
burst = 2000
create_rate = 100
create_burst = 100

[supervisor]
ports = "%d-%d"
max_instances = 4
max_players = 4
spawn_timeout = "20s"
stop_grace = "3s"
port_cooldown = "50ms"
seat_ttl = "120s"
# The JOINs come from one address of the client's namespace, and the
# CREATEs too: a test of exact seats across hosts, not of quotas.
seats_per_address = 128
rooms_per_network = 4
empty_timeout = "300s"

[room]
min_players = 1
countdown = "0s"
match_duration = "2s"

[admin]
listen = "127.0.0.1:9477"

[log]
level = "debug"
format = "json"

[cluster]
host = %q
%s
`, clusterLobbyPort, h.first, h.first+9, h.name, cluster)
}

// newHost makes host name's namespace at ip, its config, and a client of
// its admin pages.
func (cn *clusterNet) newHost(name string, i int, cluster string) *clusterHost {
	h := &clusterHost{name: name, ip: backIP(i), first: uint16(30000 + 100*i)}
	h.ns = cn.member(name, h.ip)
	h.config = filepath.Join(cn.t.TempDir(), name+".toml")
	if err := os.WriteFile(h.config, []byte(hostConfig(h, cluster)), 0o600); err != nil {
		cn.t.Fatal(err)
	}
	h.http = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := inNetns(h.ns, func() (err error) { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return err })
			return c, err
		}}}
	return h
}

// start runs the host and returns once it is ready (--ready-json); at
// the end of the test it must stop cleanly on SIGTERM.
func (h *clusterHost) start(t *testing.T) {
	t.Helper()
	h.log, h.done = &logtest.Buffer{}, make(chan struct{})
	h.cmd = exec.Command("ip", "netns", "exec", h.ns, bin, "serve", "--config", h.config, "--ready-json")
	h.cmd.Stderr = h.log
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", h.name, err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && strings.Contains(sc.Text(), `"foyer":"ready"`)
		io.Copy(io.Discard, out)
		h.err = h.cmd.Wait()
		close(h.done)
	}()
	cmd, done := h.cmd, h.done
	t.Cleanup(func() {
		select {
		case <-done:
			return
		default:
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			if h.cmd == cmd && h.err != nil {
				t.Errorf("%s: foyer serve did not exit cleanly on SIGTERM: %v", h.name, h.err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%s: foyer serve ignored SIGTERM", h.name)
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", h.name, h.log)
		}
	})
	select {
	case ok := <-ready:
		if !ok {
			<-done
			t.Fatalf("%s: foyer serve never got ready: %v\n%s", h.name, h.err, h.log)
		}
	case <-time.After(clusterWait):
		t.Fatalf("%s: foyer serve not ready within %v\n%s", h.name, clusterWait, h.log)
	}
}

// kill9 kills the host's foyer serve outright.
func (h *clusterHost) kill9(t *testing.T) {
	t.Helper()
	h.cmd.Process.Kill()
	<-h.done
}

// clusterRoom is a row of /rooms.
type clusterRoom struct {
	ID    uint32 `json:"id"`
	Node  string `json:"node"`
	Host  string `json:"host"`
	Port  uint16 `json:"port"`
	Seats int    `json:"seats"`
}

// rooms reads the host's /rooms.
func (h *clusterHost) rooms(t testing.TB) []clusterRoom {
	t.Helper()
	var table struct{ Rooms []clusterRoom }
	if err := json.Unmarshal([]byte(h.get(t, "/rooms")), &table); err != nil {
		t.Fatalf("%s /rooms: %v", h.name, err)
	}
	return table.Rooms
}

// get reads one of the host's admin pages.
func (h *clusterHost) get(t testing.TB, page string) string {
	t.Helper()
	resp, err := h.http.Get("http://127.0.0.1:9477" + page)
	if err != nil {
		t.Fatalf("%s %s: %v", h.name, page, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", h.name, page, err)
	}
	return string(b)
}

// metric reads one unlabelled metric of the host's /metrics.
func (h *clusterHost) metric(t testing.TB, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(h.get(t, "/metrics"))
	if m == nil {
		t.Fatalf("%s: no metric %s", h.name, name)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// await polls cond until it holds, failing the test after clusterWait;
// it returns how long it took, for the log.
func await(t testing.TB, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > clusterWait {
			t.Fatalf("%s: not within %v", what, clusterWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// hostOf names the host whose port range holds port.
func hostOf(hosts []*clusterHost, port uint16) string {
	for _, h := range hosts {
		if port >= h.first && port <= h.first+9 {
			return h.name
		}
	}
	return "none"
}

// listedBy reports whether room id is in every host's /rooms, run by
// node; or in none of them when want is false.
func listedBy(t testing.TB, hosts []*clusterHost, id uint32, node string, want bool) bool {
	for _, h := range hosts {
		i := slices.IndexFunc(h.rooms(t), func(r clusterRoom) bool { return r.ID == id })
		if (i >= 0) != want || want && h.rooms(t)[i].Node != node {
			return false
		}
	}
	return true
}

// converged reports whether every host lists the same rooms, once each,
// and these are exactly the rooms each host lists as its own.
func converged(t testing.TB, hosts []*clusterHost) bool {
	var want []string
	views := make([][]string, len(hosts))
	for i, h := range hosts {
		for _, r := range h.rooms(t) {
			row := fmt.Sprintf("%d@%s", r.ID, r.Node)
			views[i] = append(views[i], row)
			if r.Node == h.name {
				want = append(want, row)
			}
		}
	}
	slices.Sort(want)
	for _, v := range views {
		slices.Sort(v)
		if !slices.Equal(v, want) {
			return false
		}
	}
	return true
}

// debianNATS requires Debian's nats-server and returns its path: it is
// in /usr/sbin, which is not on every user's PATH.
func debianNATS(t testing.TB) string {
	t.Helper()
	return requiretest.Command(t, "nats-server", "/usr/sbin/nats-server")
}

// natsServer is Debian's nats-server (at path) with JetStream, in its
// namespace.
type natsServer struct {
	path      string
	ns, store string
	cmd       *exec.Cmd
	log       *logtest.Buffer
}

func (n *natsServer) start(t *testing.T) {
	t.Helper()
	n.log = &logtest.Buffer{}
	n.cmd = exec.Command("ip", "netns", "exec", n.ns, n.path, "-js", "-a", clusterNATS.String(), "-p", "4222", "-sd", n.store)
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	cmd := n.cmd
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

func (n *natsServer) stop() {
	n.cmd.Process.Signal(syscall.SIGTERM)
	n.cmd.Wait()
}

// clusterCreate creates a room at lobby from the client's namespace.
func clusterCreate(t *testing.T, cn *clusterNet, lobby netip.Addr) cliSeatJSON {
	t.Helper()
	r := cliRun(t, []string{"ip", "netns", "exec", cn.client}, "create", "--json", "--timeout", "3s",
		netip.AddrPortFrom(lobby, clusterLobbyPort).String())
	if r.code != 0 {
		t.Fatalf("create at %v: exit %d\n%s%s", lobby, r.code, r.stdout, r.stderr)
	}
	var seat cliSeatJSON
	cliDecode(t, r.stdout, &seat)
	return seat
}

// TestClusterBehindOneAddress is issue 15's deployment: four hosts behind
// one public address, NATS from Debian in a namespace of its own.
// Rooms created through the public address land on every host by free
// capacity and are played through the forwarded ports to the end; 100
// concurrent JOINs through three lobbies to a 4-seat room on the fourth
// yield exactly its free seats; a host killed with -9 leaves every list
// and comes back; a host cut off for 20 s while the NATS server restarts
// leaves and comes back, and every view converges on the same rooms.
func TestClusterBehindOneAddress(t *testing.T) {
	requiretest.Command(t, "nft") // the forwarder
	server := debianNATS(t)
	start := time.Now()
	cn := newClusterNet(t)
	nats := &natsServer{path: server, ns: cn.member("n", clusterNATS), store: t.TempDir()}
	nats.start(t)
	cluster := fmt.Sprintf("nats = \"nats://%v:4222\"\npublic_addr = %q", clusterNATS, clusterPublic)
	var hosts []*clusterHost
	for i, name := range []string{"a", "b", "c", "d"} {
		hosts = append(hosts, cn.newHost(name, i+1, cluster))
	}
	cn.forward(hosts[0].ip, hosts)
	// d keeps its rooms in a state directory: they outlive its lobby.
	d := hosts[3]
	conf, _ := os.ReadFile(d.config)
	conf = []byte(strings.Replace(string(conf), "[supervisor]\n", fmt.Sprintf("[supervisor]\nstate_dir = %q\nreattach_grace = \"30s\"\n", shortDir(t)), 1))
	if err := os.WriteFile(d.config, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Go(func() { h.start(t) })
	}
	wg.Wait()
	for _, h := range hosts {
		await(t, h.name+" sees four hosts", func() bool { return h.metric(t, "foyer_cluster_hosts") == 4 })
	}
	t.Logf("four hosts up in %v", time.Since(start).Round(time.Millisecond))

	{
		t.Log("placed by load, played through the forwarder")
		// One after the other, each CREATE goes to the freest host: the
		// lobby's own first (ties), then the others.
		type play struct {
			cmd *exec.Cmd
			out *logtest.Buffer
		}
		var plays []play
		seen := map[string]bool{}
		for range hosts {
			p := play{exec.Command("ip", "netns", "exec", cn.client, bin, "play", "--ready", "--timeout", "3s",
				netip.AddrPortFrom(clusterPublic, clusterLobbyPort).String()), &logtest.Buffer{}}
			p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
			if err := p.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			plays = append(plays, p)
			created := regexp.MustCompile(`created room (\d+), port (\d+)`)
			var port uint64
			await(t, "a room created", func() bool {
				m := created.FindStringSubmatch(p.out.String())
				if m != nil {
					port, _ = strconv.ParseUint(m[2], 10, 16)
				}
				return m != nil
			})
			seen[hostOf(hosts, uint16(port))] = true
		}
		for _, p := range plays {
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("play through %v: %v\n%s", clusterPublic, err, p.out)
			}
		}
		if len(seen) != len(hosts) {
			t.Errorf("four CREATEs landed on %v; want one on each host", seen)
		}
	}

	{
		t.Log("100 JOINs through three lobbies to a room on a fourth")
		// The room lands where there is most room (most likely d itself);
		// the JOINs go through the lobbies of the three other hosts.
		seat := clusterCreate(t, cn, hosts[3].ip)
		owner := hostOf(hosts, seat.Port)
		await(t, "the room in every view", func() bool { return listedBy(t, hosts, seat.Room, owner, true) })
		var lobbies []netip.AddrPort
		for _, h := range hosts {
			if h.name != owner {
				lobbies = append(lobbies, netip.AddrPortFrom(h.ip, clusterLobbyPort))
			}
		}
		var joins sync.WaitGroup
		var mu sync.Mutex
		results := map[byte]int{}
		for i := range 100 {
			c := udpIn(t, cn.client)
			to := lobbies[i%len(lobbies)]
			joins.Go(func() {
				typ := joinOnce(c, to, seat.Room)
				mu.Lock()
				results[typ]++
				mu.Unlock()
			})
		}
		joins.Wait()
		if results[joinSuccess] != 3 || results[joinFailed] != 97 {
			t.Errorf("100 JOINs to a room of 4 with its creator's seat held: %d JOIN_SUCCESS, %d JOIN_FAILED, %d unanswered; want 3 and 97",
				results[joinSuccess], results[joinFailed], results[0])
		}
		for _, h := range hosts {
			if i := slices.IndexFunc(h.rooms(t), func(r clusterRoom) bool { return r.ID == seat.Room }); i < 0 {
				t.Errorf("%s no longer lists the room", h.name)
			}
		}
	}

	{
		t.Log("kill -9 a host, and bring it back")
		c := hosts[2]
		seat := createOn(t, cn, hosts, c)
		await(t, "c's room in every view", func() bool { return listedBy(t, hosts, seat.Room, "c", true) })
		c.kill9(t)
		others := []*clusterHost{hosts[0], hosts[1], hosts[3]}
		took := await(t, "c's room gone from the other lists", func() bool { return listedBy(t, others, seat.Room, "", false) })
		t.Logf("c's room left the other lists %v after kill -9 (host TTL 6 s)", took.Round(10*time.Millisecond))
		if s := clusterCreate(t, cn, clusterPublic); hostOf(hosts, s.Port) == "c" {
			t.Errorf("a CREATE went to the dead host c")
		}
		c.start(t)
		await(t, "c back in every view", func() bool {
			return hosts[0].metric(t, "foyer_cluster_hosts") == 4 && hosts[1].metric(t, "foyer_cluster_hosts") == 4
		})
		s := createOn(t, cn, hosts, c)
		await(t, "c's new room in every view", func() bool { return listedBy(t, hosts, s.Room, "c", true) })
		if !listedBy(t, hosts, seat.Room, "", false) {
			t.Errorf("room %d of c's previous run is listed again: a ghost", seat.Room)
		}
		// foyer rooms, reading a's admin listener, names each room's host.
		r := cliRun(t, []string{"ip", "netns", "exec", hosts[0].ns}, "rooms", "--admin", "127.0.0.1:9477")
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^%d +\S+ +\S+ +%d +c$`, s.Room, s.Port))
		if r.code != 0 || !strings.HasPrefix(r.stdout, "ROOM ") || !strings.Contains(strings.Split(r.stdout, "\n")[0], "HOST") || !row.MatchString(r.stdout) {
			t.Errorf("foyer rooms --admin at a: exit %d, want room %d on host c in a HOST column:\n%s%s", r.code, s.Room, r.stdout, r.stderr)
		}
	}

	{
		t.Log("a lobby killed and restarted adopts its rooms: they never leave the lists")
		seat := createOn(t, cn, hosts, d)
		await(t, "d's room in every view", func() bool { return listedBy(t, hosts, seat.Room, "d", true) })
		gone := make(chan bool, 1)
		stop := make(chan struct{})
		go func() { // a looks at its list every 50 ms all along
			missing := false
			for {
				select {
				case <-stop:
					gone <- missing
					return
				case <-time.After(50 * time.Millisecond):
				}
				if resp, err := hosts[0].http.Get("http://127.0.0.1:9477/rooms"); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					missing = missing || !strings.Contains(string(b), fmt.Sprintf(`"id": %d,`, seat.Room))
				}
			}
		}()
		d.kill9(t)
		d.start(t)
		await(t, "d adopted its room", func() bool {
			return slices.ContainsFunc(d.rooms(t), func(r clusterRoom) bool { return r.ID == seat.Room })
		})
		time.Sleep(7 * time.Second) // past the host TTL: a lost heartbeat would have shown by now
		close(stop)
		if <-gone {
			t.Errorf("d's room %d left a's list while d's lobby restarted", seat.Room)
		}
	}
	{
		t.Log("a host cut off for 20 s while NATS restarts")
		a, b := hosts[0], hosts[1]
		seat := createOn(t, cn, hosts, b)
		await(t, "b's room in every view", func() bool { return listedBy(t, hosts, seat.Room, "b", true) })
		cut := time.Now()
		cn.setLink("b", false)
		others := []*clusterHost{a, hosts[2], hosts[3]}
		took := await(t, "b's room gone from the other lists", func() bool { return listedBy(t, others, seat.Room, "", false) })
		t.Logf("b's room left the other lists %v after its link was cut", took.Round(10*time.Millisecond))
		nats.stop()
		await(t, "a degraded", func() bool { return strings.HasPrefix(a.get(t, "/healthz"), "degraded") })
		if a.metric(t, "foyer_cluster_up") != 0 {
			t.Errorf("a's /metrics says the cluster is up while NATS is down")
		}
		alone := clusterCreate(t, cn, clusterPublic)
		if on := hostOf(hosts, alone.Port); on != "a" {
			t.Errorf("with NATS down a's lobby placed a room on %s", on)
		}
		nats.start(t)
		time.Sleep(20*time.Second - time.Since(cut))
		cn.setLink("b", true)
		took = await(t, "every view the same", func() bool {
			return converged(t, hosts) && listedBy(t, hosts, seat.Room, "b", true) && listedBy(t, hosts, alone.Room, "a", true)
		})
		t.Logf("views converged %v after b's link came back", took.Round(10*time.Millisecond))
		for _, h := range hosts {
			await(t, h.name+" healthy", func() bool { return strings.HasPrefix(h.get(t, "/healthz"), "ok\n") })
		}
	}
	t.Logf("whole test %v", time.Since(start).Round(time.Millisecond))
}

// joinOnce sends one JOIN for room to lobby and returns the type of the
// answer (0 for none), sending again with the same sequence number (the
// lobby answers a retry as it answered the first) while none comes.
func joinOnce(c *net.UDPConn, lobby netip.AddrPort, room uint32) byte {
	req := encode(compact, joinRoom, 1, 0, joinPayload(room))
	for range 5 {
		c.WriteToUDPAddrPort(req, lobby)
		b, err := udptest.Read(c, lobby, 2*time.Second)
		if err != nil || b == nil {
			continue
		}
		if r, err := decode(b); err == nil {
			return r.typ
		}
	}
	return 0
}

// TestClusterEmbedded: three hosts and no NATS installed, one host
// running the embedded server, which lets in the two others by the keys
// it wrote for them. Each host's public address is its own:
// CREATEs at one lobby land on every host, every view shows every room
// with its host's address, and the native list of a lobby offers only
// the rooms players reach at its address.
func TestClusterEmbedded(t *testing.T) {
	start := time.Now()
	cn := newClusterNet(t)
	// a's server lets in b and c, whose keys it writes to its state_dir.
	embedded := fmt.Sprintf("embedded = \"%v:4222\"\nmembers = [\"b\", \"c\"]", backIP(1))
	joined := fmt.Sprintf("nats = \"nats://%v:4222\"", backIP(1))
	hosts := []*clusterHost{cn.newHost("a", 1, embedded), cn.newHost("b", 2, joined), cn.newHost("c", 3, joined)}
	state := shortDir(t)
	for _, h := range hosts { // the lobby listens on the host's address: its public one
		b, _ := os.ReadFile(h.config)
		conf := strings.Replace(string(b), `listen = "0.0.0.0:7777"`, fmt.Sprintf(`listen = "%v:7777"`, h.ip), 1)
		if h.name == "a" {
			conf = strings.Replace(conf, "[supervisor]\n", fmt.Sprintf("[supervisor]\nstate_dir = %q\n", state), 1)
		}
		os.WriteFile(h.config, []byte(conf), 0o600)
	}
	hosts[0].start(t)
	for _, h := range hosts[1:] { // the operator copies each its key, [cluster] nkey
		seed := filepath.Join(t.TempDir(), "cluster.nk")
		copyFile(t, filepath.Join(state, "cluster", h.name+".nk"), seed)
		os.Chmod(seed, 0o600)
		f, _ := os.OpenFile(h.config, os.O_APPEND|os.O_WRONLY, 0)
		fmt.Fprintf(f, "nkey = %q\n", seed)
		f.Close()
	}
	var wg sync.WaitGroup
	for _, h := range hosts[1:] {
		wg.Go(func() { h.start(t) })
	}
	wg.Wait()
	for _, h := range hosts {
		await(t, h.name+" sees three hosts", func() bool { return h.metric(t, "foyer_cluster_hosts") == 3 })
	}
	a := hosts[0]
	on := map[string]uint32{}
	for range hosts {
		s := clusterCreate(t, cn, a.ip)
		on[hostOf(hosts, s.Port)] = s.Room
	}
	if len(on) != 3 {
		t.Fatalf("three CREATEs at a landed on %v; want one on each host", on)
	}
	for name, id := range on {
		await(t, fmt.Sprintf("room %d of %s in every view", id, name), func() bool { return listedBy(t, hosts, id, name, true) })
	}
	at := map[string]string{"a": "", "b": hosts[1].ip.String(), "c": hosts[2].ip.String()}
	for _, r := range a.rooms(t) {
		if want := at[r.Node]; r.Host != want {
			t.Errorf("a lists room %d of %s at %q; want %q", r.ID, r.Node, r.Host, want)
		}
	}
	r := cliRun(t, []string{"ip", "netns", "exec", cn.client}, "rooms", "--json", netip.AddrPortFrom(a.ip, clusterLobbyPort).String())
	var listed cliRoomsJSON
	cliDecode(t, r.stdout, &listed)
	if len(listed.Rooms) != 1 || listed.Rooms[0].ID != on["a"] {
		t.Errorf("a's native list %+v; want a's own room %d only: the others are not reached at a's address", listed.Rooms, on["a"])
	}
	t.Logf("whole test %v", time.Since(start).Round(time.Millisecond))
}

// createOn creates rooms at h's lobby until one lands on h (its lobby
// places there when it is the freest host, which a room of the others
// still being reaped can make it not be for a moment), and returns it.
func createOn(t *testing.T, cn *clusterNet, hosts []*clusterHost, h *clusterHost) cliSeatJSON {
	t.Helper()
	for range 4 {
		if seat := clusterCreate(t, cn, h.ip); hostOf(hosts, seat.Port) == h.name {
			return seat
		}
	}
	t.Fatalf("four CREATEs at %s's lobby, none placed on %s", h.name, h.name)
	return cliSeatJSON{}
}
