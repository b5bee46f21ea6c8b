package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/room"
)

// entry is a bucket entry, as a watch delivers it.
type entry struct {
	key     string
	value   []byte
	op      jetstream.KeyValueOp
	created time.Time // when it was written; the zero time: now
}

func (e entry) Bucket() string   { return clusterBucket }
func (e entry) Key() string      { return e.key }
func (e entry) Value() []byte    { return e.value }
func (e entry) Revision() uint64 { return 1 }
func (e entry) Created() time.Time {
	if e.created.IsZero() {
		return time.Now()
	}
	return e.created
}
func (e entry) Delta() uint64                   { return 0 }
func (e entry) Operation() jetstream.KeyValueOp { return e.op }

func put(key string, v any) entry {
	b, _ := json.Marshal(v)
	return entry{key: key, value: b, op: jetstream.KeyValuePut}
}

// idIn is an id of range n.
func idIn(n int, i uint32) uint32 { return uint32(n)<<rangeBits | i }

func roomOf(id uint32) roomRecord {
	return roomRecord{ID: id, Port: 30000, State: packet.Waiting, MaxPlayers: 4, Source: room.Instance}
}

// A host lists only the rooms of the range of ids it holds: a room it
// announces in another host's range is refused, a room another live host
// lists stays that host's, and a heartbeat claiming the range a live host
// holds is refused, as long as that host lives.
func TestViewTakesNoRoomOfAnotherHost(t *testing.T) {
	v := newView("me", public, time.Minute, 0)
	now := time.Now()
	apply := func(e entry) bool {
		t.Helper()
		_, refused := v.apply(e, now, false)
		return refused
	}
	if apply(put(hostKey("a"), hostRecord{Addr: public, Free: 1, Range: 1})) || apply(put(hostKey("b"), hostRecord{Addr: public, Free: 1, Range: 2})) {
		t.Fatal("two hosts of two ranges refused")
	}
	mine := idIn(1, 7)
	if apply(put(roomKey("a", mine), roomOf(mine))) {
		t.Fatal("a room of a's range refused")
	}
	if !apply(put(roomKey("b", mine), roomOf(mine))) {
		t.Error("b's announcement of a's room was taken")
	}
	if !apply(put(roomKey("b", idIn(1, 8)), roomOf(idIn(1, 8)))) {
		t.Error("b's room in a's range was taken")
	}
	if host, ok := v.owner(mine); !ok || host != "a" {
		t.Errorf("room %d is %q's, want a's", mine, host)
	}
	_, rooms := v.visible()
	if len(rooms) != 1 || rooms[0].ID != mine || rooms[0].Node != "a" {
		t.Errorf("visible rooms %+v, want a's one", rooms)
	}
	if !apply(put(hostKey("c"), hostRecord{Addr: public, Free: 1, Range: 1})) {
		t.Error("c's heartbeat claiming a's range was taken")
	}
	if hosts, _ := v.counts(); hosts != 2 {
		t.Errorf("%d live hosts, want a and b", hosts)
	}
	// Once a is gone, its range is free for another.
	v.apply(entry{key: hostKey("a"), op: jetstream.KeyValueDelete}, now, false)
	if apply(put(hostKey("c"), hostRecord{Addr: public, Free: 1, Range: 1})) {
		t.Error("c's heartbeat refused after a left")
	}
}

// A heartbeat that changes nothing makes no event; a host that moves has
// its rooms changed to its new address; a host that takes another range
// has the rooms of its old one reaped, and leaves that range to others.
func TestViewHeartbeats(t *testing.T) {
	v := newView("me", public, time.Minute, 0)
	now := time.Now()
	apply := func(e entry) []room.Event {
		t.Helper()
		evs, refused := v.apply(e, now, false)
		if refused {
			t.Fatalf("%s refused", e.key)
		}
		return evs
	}
	id := idIn(1, 1)
	apply(put(hostKey("a"), hostRecord{Addr: public, Free: 1, Range: 1}))
	apply(put(roomKey("a", id), roomOf(id)))
	if evs := apply(put(hostKey("a"), hostRecord{Addr: public, Free: 1, Range: 1})); len(evs) != 0 {
		t.Errorf("a heartbeat that changes nothing made events %+v", evs)
	}
	evs := apply(put(hostKey("a"), hostRecord{Addr: other, Free: 1, Range: 1}))
	if len(evs) != 1 || evs[0].Kind != room.Changed || evs[0].Room.Host != other {
		t.Errorf("a moved to %v: events %+v; want its room changed to there", other, evs)
	}
	evs = apply(put(hostKey("a"), hostRecord{Addr: other, Free: 1, Range: 2}))
	if len(evs) != 1 || evs[0].Kind != room.Reaped || evs[0].Room.ID != id {
		t.Errorf("a took range 2: events %+v; want room %d of range 1 reaped", evs, id)
	}
	if hosts, rooms := v.counts(); hosts != 1 || rooms != 0 {
		t.Errorf("%d live hosts with %d rooms; want a alone, with none", hosts, rooms)
	}
	apply(put(hostKey("b"), hostRecord{Addr: public, Free: 1, Range: 1})) // range 1 is free
}

// A room placed on another host is answered at that host's address (none
// when it shares this host's), and the placing host waits for it to
// arrive in its view only until it is there.
func TestViewPlacedRooms(t *testing.T) {
	v := newView("me", public, time.Minute, 0)
	now := time.Now()
	v.apply(put(hostKey("near"), hostRecord{Addr: public, Free: 1, Range: 1}), now, false)
	v.apply(put(hostKey("far"), hostRecord{Addr: other, Free: 1, Range: 2}), now, false)
	if r := v.row("far", roomOf(idIn(2, 1))); r.Host != other || r.Node != "far" {
		t.Errorf("a room of far answered at %v on %q; want %v on far", r.Host, r.Node, other)
	}
	if r := v.row("near", roomOf(idIn(1, 1))); r.Host.IsValid() {
		t.Errorf("a room of near answered at %v; want no address", r.Host)
	}
	id := idIn(2, 1)
	arrived := v.arrival(id)
	select {
	case <-arrived:
		t.Fatal("room arrived before far wrote it")
	default:
	}
	v.apply(put(roomKey("far", id), roomOf(id)), now, false)
	select {
	case <-arrived:
	default:
		t.Fatal("room not arrived once far wrote it")
	}
	select {
	case <-v.arrival(id):
	default:
		t.Error("a room in the view is not arrived at once")
	}
}

// A replay takes a heartbeat as being as old as its entry, so a host
// silent for long does not come back for a moment; and what a replay does
// not repeat is gone from the bucket: a room deleted while the watch was
// down leaves the view when the watch is back.
func TestViewReplay(t *testing.T) {
	v := newView("me", public, time.Minute, 0)
	now := time.Now()
	replay := func(es ...entry) []room.Event {
		v.begin()
		for _, e := range es {
			v.apply(e, now, true)
		}
		return v.replayed()
	}
	a := put(hostKey("a"), hostRecord{Addr: public, Free: 1, Range: 1})
	silent := put(hostKey("silent"), hostRecord{Addr: public, Free: 1, Range: 2})
	silent.created = now.Add(-10 * time.Minute)
	r1, r2 := idIn(1, 1), idIn(1, 2)
	replay(a, silent, put(roomKey("a", r1), roomOf(r1)), put(roomKey("a", r2), roomOf(r2)))
	if hosts, rooms := v.counts(); hosts != 1 || rooms != 2 {
		t.Errorf("after the first replay: %d live hosts with %d rooms; want a alone, with 2 (a heartbeat 10 minutes old is no sign of life)", hosts, rooms)
	}
	evs := replay(a, put(roomKey("a", r1), roomOf(r1)))
	if len(evs) != 1 || evs[0].Kind != room.Reaped || evs[0].Room.ID != r2 {
		t.Errorf("the replay without room %d made events %+v; want it reaped", r2, evs)
	}
	if _, rooms := v.visible(); len(rooms) != 1 || rooms[0].ID != r1 {
		t.Errorf("visible rooms %+v, want room %d alone", rooms, r1)
	}
}

// Placement counts a host as able to run no more than maxRooms rooms,
// those it lists included, whatever free capacity it claims.
func TestPlacementBoundsClaimedCapacity(t *testing.T) {
	v := newView("me", public, time.Minute, 4)
	now := time.Now()
	v.apply(put(hostKey("liar"), hostRecord{Addr: public, Free: 1000, Range: 3}), now, false)
	v.apply(put(hostKey("honest"), hostRecord{Addr: public, Free: 2, Range: 4}), now, false)
	free := func() map[string]int {
		out := map[string]int{}
		for _, c := range v.candidates() {
			out[c.host] = c.free
		}
		return out
	}
	if f := free(); f["liar"] != 4 || f["honest"] != 2 {
		t.Errorf("free capacity %v, want the liar at 4 (max_host_rooms), honest at 2", f)
	}
	for i := range uint32(3) {
		v.apply(put(roomKey("liar", idIn(3, i+1)), roomOf(idIn(3, i+1))), now, false)
	}
	reg := roomOf(idIn(3, 9))
	reg.Source = room.GG2 // a registered server takes no room of the host's
	v.apply(put(roomKey("liar", reg.ID), reg), now, false)
	if f := free(); f["liar"] != 1 {
		t.Errorf("free capacity of a host running 3 rooms of 4 and claiming 1000: %d, want 1", f["liar"])
	}
}

// authedCluster runs host a with the embedded server (members b and c),
// and b and c with the keys it wrote for them.
func authedCluster(t *testing.T) (url, keys string, a, b, c *Cluster) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	keys = filepath.Join(t.TempDir(), "cluster")
	ca := testConfig("", "a", public)
	ca.NATS, ca.Embedded, ca.KeysDir, ca.Members, ca.StoreDir = nil, addr, keys, []string{"b", "c"}, t.TempDir()
	a = mustJoin(t, ca, 1)
	url = "nats://" + addr
	cb, cc := testConfig(url, "b", public), testConfig(url, "c", public)
	cb.NKey, cc.NKey = SeedFile(keys, "b"), SeedFile(keys, "c")
	b, c = mustJoin(t, cb, 2), mustJoin(t, cc, 3)
	eventually(t, "every host sees the others", func() bool {
		return a.Stats().Hosts == 3 && b.Stats().Hosts == 3 && c.Stats().Hosts == 3
	})
	return url, keys, a, b, c
}

// The embedded server lets in only the hosts it has keys for, each
// allowed only its own keys and subjects: a client without a key, or with
// a key of its own, is refused; a client with host b's key (b, or a room
// that stole it) cannot write host a's keys, answer or read a's
// requests (and their players' addresses) or anyone's replies, and what
// it writes under b's name in another host's range is refused by every
// view. The hosts themselves place, join and list as ever.
func TestEmbeddedServerAuthority(t *testing.T) {
	url, keys, a, b, c := authedCluster(t)

	// The hosts work: CREATEs at a go to the freest, c, then b; a JOIN
	// at a of c's room is answered by c.
	r, err := a.Create(context.Background(), player)
	if err != nil || r.Node != "c" {
		t.Fatalf("CREATE at a: %+v, %v; want a room on c", r, err)
	}
	eventually(t, "c's room in b's view", func() bool { return lists(b, r.ID, "c") })
	if j, err := a.Join(context.Background(), r.ID, netip.MustParseAddrPort("203.0.113.9:1"), room.SawListing); err != nil || j.Seats != 2 {
		t.Fatalf("JOIN at a of c's room: %+v, %v", j, err)
	}

	// No key, or a key the server does not know: refused.
	for name, opts := range map[string][]nats.Option{
		"no key":      nil,
		"another key": {nats.Nkey(strangerKey(t))},
	} {
		if nc, err := nats.Connect(url, append(opts, nats.Timeout(2*time.Second))...); err == nil {
			nc.Close()
			t.Errorf("a client with %s connected", name)
		} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
			t.Errorf("a client with %s: %v, want an authorization violation", name, err)
		}
	}

	// b's key, in other hands.
	kp, err := ReadSeed(SeedFile(keys, "b"))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	var mu sync.Mutex
	var violations []string
	nc, err := nats.Connect(url, nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(InboxPrefix("b")),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			violations = append(violations, err.Error())
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	violated := func(subject string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range violations {
			if strings.Contains(v, "Permissions Violation") && strings.Contains(v, `"`+subject+`"`) {
				return true
			}
		}
		return false
	}
	for _, subject := range []string{subjectPrefix + "a.create", subjectPrefix + "c.join", "_INBOX.>", InboxPrefix("a") + ".>", "$KV.>"} {
		if _, err := nc.SubscribeSync(subject); err != nil {
			t.Fatal(err)
		}
		nc.Flush()
		eventually(t, "the refusal of a subscription to "+subject, func() bool { return violated(subject) })
	}
	for _, subject := range []string{kvSubjects + clusterBucket + "." + hostKey("a"), kvSubjects + clusterBucket + "." + roomKey("a", 5),
		kvSubjects + idsBucket + "." + ownerKey("a"), InboxPrefix("a") + ".x"} {
		nc.Publish(subject, []byte("{}"))
		nc.Flush()
		eventually(t, "the refusal of a publication to "+subject, func() bool { return violated(subject) })
	}

	// What b may write, under its own name, about c's room or in c's
	// range, every other view refuses.
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), clusterBucket)
	if err != nil {
		t.Fatal(err)
	}
	before := a.Stats().Malformed
	first, _, _ := c.IDs()
	for _, id := range []uint32{r.ID, first + 999} {
		rec, _ := json.Marshal(roomOf(id))
		if _, err := kv.Put(context.Background(), roomKey("b", id), rec); err != nil {
			t.Fatalf("b's own key: %v", err)
		}
	}
	eventually(t, "a refused both", func() bool { return a.Stats().Malformed >= before+2 })
	if !lists(a, r.ID, "c") || lists(a, first+999, "b") {
		t.Errorf("a's list after b announced c's room: %+v", a.List().Rooms)
	}
	if host, ok := a.view.owner(r.ID); !ok || host != "c" {
		t.Errorf("a sends JOINs of room %d to %q, want c", r.ID, host)
	}
}

// strangerKey is the key of a user the server does not know.
func strangerKey(t *testing.T) (string, nats.SignatureHandler) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return pub, kp.Sign
}

// The seeds the embedded server writes are its hosts' secrets: 0600 in
// KeysDir, made once, refused when others may read them.
func TestSeedFiles(t *testing.T) {
	dir := t.TempDir()
	pubs, _, err := hostKeys(dir, "a", []string{"b"})
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := hostKeys(dir, "a", []string{"b"})
	if err != nil || again["b"] != pubs["b"] || !strings.HasPrefix(pubs["b"], "U") {
		t.Errorf("keys %v, then %v (%v): want the same user keys", pubs, again, err)
	}
	path := SeedFile(dir, "b")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSeed(path); err == nil || !strings.Contains(err.Error(), "chmod o-rw,g-w "+path) {
		t.Errorf("a seed every user reads: %v", err)
	}
	if _, _, err := hostKeys("", "a", []string{"b"}); err == nil {
		t.Error("members' keys without a directory to write them to")
	}
	if _, err := ReadSeed(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing seed: %v", err)
	}
}

// With embedded_tls_cert and embedded_tls_key the embedded server speaks
// TLS only: a host that trusts its certificate joins, a client in plain
// TCP is refused, and the host of the server serves through it as ever.
func TestEmbeddedServerTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	keys := filepath.Join(dir, "cluster")
	ca := testConfig("", "a", public)
	ca.NATS, ca.Embedded, ca.KeysDir, ca.Members, ca.StoreDir = nil, addr, keys, []string{"b"}, t.TempDir()
	ca.ServerTLSCert, ca.ServerTLSKey = cert, key
	a := mustJoin(t, ca, 1)
	cb := testConfig("tls://"+addr, "b", public)
	cb.NKey, cb.TLSCA = SeedFile(keys, "b"), cert
	b := mustJoin(t, cb, 2)
	eventually(t, "a and b see each other", func() bool { return a.Stats().Hosts == 2 && b.Stats().Hosts == 2 })
	if r, err := a.Create(context.Background(), player); err != nil || r.Node != "b" {
		t.Fatalf("CREATE at a over TLS: %+v, %v; want a room on b", r, err)
	}
	kp, _ := ReadSeed(SeedFile(keys, "b"))
	pub, _ := kp.PublicKey()
	if nc, err := nats.Connect("nats://"+addr, nats.Nkey(pub, kp.Sign), nats.Timeout(2*time.Second)); err == nil {
		nc.Close()
		t.Error("a client without TLS connected")
	}
}

// selfSigned writes a certificate for 127.0.0.1, its own CA, and its key,
// and returns their paths.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "foyer test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cert, key
}
