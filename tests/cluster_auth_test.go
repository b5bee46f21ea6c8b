package tests

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/foyerlobby/foyer/internal/logtest"
)

// busHost is one `foyer serve` of a cluster on loopback.
type busHost struct {
	name  string
	first int // first port of its rooms; ten of them
	cmd   *exec.Cmd
	s     *readyServe
	ready readyJSON
}

// startBusHost runs host name of a cluster on loopback, with max rooms
// and the [cluster] keys given, until the end of the test.
func startBusHost(t *testing.T, name string, first, max int, supervise, cluster string) *busHost {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".toml")
	cfg := fmt.Sprintf(`[lobby]
listen = "127.0.0.1:0"
rate = 1000
burst = 2000
create_rate = 100
create_burst = 100

[supervisor]
ports = "%d-%d"
bind = "127.0.0.1"
max_instances = %d
%s
[admin]
listen = "127.0.0.1:0"

[log]
level = "debug"
format = "json"

[cluster]
host = %q
public_addr = "127.0.0.1"
# Hosts of unlike sizes: placement counts any of them as able to run 4.
max_host_rooms = 4
%s
`, first, first+9, max, supervise, name, cluster)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &busHost{name: name, first: first}
	h.cmd = exec.Command(bin, "serve", "--ready-json", "--config", path)
	h.s, h.ready, _, _ = readyServeJSON(t, h.cmd)
	t.Cleanup(func() {
		h.cmd.Process.Signal(syscall.SIGTERM)
		h.s.wait(t)
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, h.s.logs)
		}
	})
	return h
}

// hosts is how many hosts h sees, itself included.
func (h *busHost) hosts(t *testing.T) float64 {
	return adminMetrics(t, "http://"+h.ready.Admin.String())["foyer_cluster_hosts"]
}

// The bus of the issue: an anonymous client announced a rogue host, won a
// player's CREATE by claiming free capacity, and read creators' addresses
// off the bus. With Debian's nats-server, configured with the users that
// `foyer nats-user` makes (as docs/cluster.md says), and with the
// embedded server, whose members' keys it writes to state_dir/cluster: a
// client without a key, or with a key of its own, is refused; one with
// host b's key cannot write host a's keys, nor read a's requests (with
// their creators' addresses) or replies; the hosts place, join and list
// as ever.
func TestClusterBusRefusesStrangers(t *testing.T) {
	t.Run("nats-server", func(t *testing.T) {
		natsServer := debianNATS(t)
		dir := t.TempDir()
		var users strings.Builder
		for _, name := range []string{"a", "b"} {
			r := cliRun(t, nil, "nats-user", name, "--seed-file", filepath.Join(dir, name+".nk"))
			if r.code != 0 {
				t.Fatalf("foyer nats-user %s: exit %d\n%s", name, r.code, r.stderr)
			}
			users.WriteString(r.stdout)
		}
		port := freeTCPPort(t)
		conf := filepath.Join(dir, "nats.conf")
		os.WriteFile(conf, fmt.Appendf(nil, "listen: 127.0.0.1:%d\njetstream { store_dir: %q }\nauthorization {\n  users = [\n%s  ]\n}\n",
			port, filepath.Join(dir, "store"), users.String()), 0o600)
		srv := exec.Command(natsServer, "-c", conf)
		out := &logtest.Buffer{}
		srv.Stdout, srv.Stderr = out, out
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			srv.Process.Kill()
			srv.Wait()
			if t.Failed() {
				t.Logf("nats-server:\n%s", out)
			}
		})
		url := fmt.Sprintf("nats://127.0.0.1:%d", port)
		awaitTCP(t, port)
		a := startBusHost(t, "a", 7000, 2, "", fmt.Sprintf("nats = %q\nnkey = %q", url, filepath.Join(dir, "a.nk")))
		b := startBusHost(t, "b", 7010, 4, "", fmt.Sprintf("nats = %q\nnkey = %q", url, filepath.Join(dir, "b.nk")))
		busChecks(t, url, filepath.Join(dir, "b.nk"), a, b)
	})
	t.Run("embedded", func(t *testing.T) {
		port := freeTCPPort(t)
		state := shortDir(t)
		a := startBusHost(t, "a", 7020, 2, fmt.Sprintf("state_dir = %q\n", state),
			fmt.Sprintf("embedded = \"127.0.0.1:%d\"\nmembers = [\"b\"]", port))
		// The operator copies b's key from a's state_dir to b.
		seed := filepath.Join(t.TempDir(), "cluster.nk")
		copyFile(t, filepath.Join(state, "cluster", "b.nk"), seed)
		os.Chmod(seed, 0o600)
		url := fmt.Sprintf("nats://127.0.0.1:%d", port)
		b := startBusHost(t, "b", 7030, 4, "", fmt.Sprintf("nats = %q\nnkey = %q", url, seed))
		busChecks(t, url, seed, a, b)
	})
}

// busChecks runs the checks of TestClusterBusRefusesStrangers on the
// cluster of a and b, whose server is at url and b's seed at bSeed.
func busChecks(t *testing.T, url, bSeed string, a, b *busHost) {
	t.Helper()
	for _, h := range []*busHost{a, b} {
		await(t, h.name+" sees both hosts", func() bool { return h.hosts(t) == 2 })
	}
	// b is freer: a CREATE at a's lobby lands on b, a JOIN at a's lobby
	// of b's room holds a seat there.
	c := newClient(t, "127.0.0.1", a.ready.Lobby[0])
	id, port := c.request(compact, createRoom, 1, nil).roomPort(t)
	if int(port) < b.first || int(port) > b.first+9 {
		t.Errorf("a CREATE at a's lobby got port %d; want one of b's, the freer host", port)
	}
	if r := newClient(t, "127.0.0.1", a.ready.Lobby[0]).request(compact, joinRoom, 1, joinPayload(id)); r.typ != joinSuccess {
		t.Errorf("a JOIN at a's lobby of b's room %d: %#x", id, r.typ)
	}

	// Strangers: no key, a key of their own.
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	for name, opts := range map[string][]nats.Option{"no key": nil, "a key of its own": {nats.Nkey(pub, kp.Sign)}} {
		nc, err := nats.Connect(url, append(opts, nats.Timeout(5*time.Second))...)
		if err == nil {
			nc.Close()
			t.Errorf("a client with %s connected to the bus", name)
		} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
			t.Errorf("a client with %s: %v, want an authorization violation", name, err)
		}
	}

	// b's key in other hands (a room of b's that stole it, say).
	seed, err := os.ReadFile(bSeed)
	if err != nil {
		t.Fatal(err)
	}
	bkp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
	if err != nil {
		t.Fatal(err)
	}
	bpub, _ := bkp.PublicKey()
	var mu sync.Mutex
	var refused []string
	nc, err := nats.Connect(url, nats.Nkey(bpub, bkp.Sign), nats.CustomInboxPrefix("_INBOX.foyer.b.~"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			refused = append(refused, err.Error())
			mu.Unlock()
		}))
	if err != nil {
		t.Fatalf("b's key: %v", err)
	}
	defer nc.Close()
	violated := func(subject string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range refused {
			if strings.Contains(strings.ToLower(e), "permissions violation") && strings.Contains(e, `"`+subject+`"`) {
				return true
			}
		}
		return false
	}
	// Reading a's requests (creators' and players' addresses), anyone's
	// replies, the buckets' raw subjects.
	for _, subject := range []string{"foyer.host.a.create", "foyer.host.a.join", "foyer.host.>", "_INBOX.>", "_INBOX.foyer.a.~.>", "$KV.>", ">"} {
		if _, err := nc.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
		nc.Flush()
		await(t, "b's key refused a subscription to "+subject, func() bool { return violated(subject) })
	}
	// Writing a's heartbeat (its free capacity) and rooms, a's range mark,
	// a's replies.
	for _, subject := range []string{"$KV.foyer-cluster.hosts.a", "$KV.foyer-cluster.rooms.a.1", "$KV.foyer-ids.owners.a", "_INBOX.foyer.a.~.x"} {
		nc.Publish(subject, []byte(`{"addr":"127.0.0.1","free":1000,"range":1}`))
		nc.Flush()
		await(t, "b's key refused a publication to "+subject, func() bool { return violated(subject) })
	}
	if !listsRoom(t, a, id) {
		t.Errorf("a no longer lists b's room %d", id)
	}
}

// listsRoom reports whether h's native list holds room id.
func listsRoom(t *testing.T, h *busHost, id uint32) bool {
	for _, r := range newClient(t, "127.0.0.1", h.ready.Lobby[0]).list(9) {
		if r.id == id {
			return true
		}
	}
	return false
}

// freeTCPPort returns a loopback TCP port free a moment ago (see
// freePort).
func freeTCPPort(t *testing.T) int {
	t.Helper()
	return int(freePort(t, false, true))
}

// awaitTCP waits until something listens on the loopback TCP port.
func awaitTCP(t *testing.T, port int) {
	t.Helper()
	await(t, fmt.Sprintf("a listener on port %d", port), func() bool {
		c, err := net.Dial("tcp", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String())
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}
