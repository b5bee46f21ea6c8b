package cluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// Who may do what on the bus. Every host is a NATS user of its own,
// known by an nkey: the server holds its public key, the host its seed,
// and the connection proves it by signing the server's nonce, so the
// seed never crosses the network, with or without TLS (which a password
// would). Each user may publish only its own keys and subjects, and
// subscribe only to its own requests and replies (Permissions): a host,
// or a room on it that got hold of nothing, cannot announce rooms or
// capacity for another host, answer another host's requests, nor read
// the CREATEs and JOINs (with their players' addresses) sent to another.
//
// The embedded server always asks for them: it makes one key for this
// host and one for each host of Config.Members, whose seeds it writes to
// KeysDir for the operator to copy to each host (Config.NKey). A server
// of one's own gets the same users, from the block `foyer nats-user`
// prints (see docs/cluster.md).

// The subjects of a bucket's keys, and of the JetStream API for a
// bucket's stream.
const (
	kvSubjects = "$KV."
	jsAPI      = "$JS.API."
)

// InboxPrefix is the prefix of host's reply subjects (nats.CustomInboxPrefix):
// each host subscribes to its own replies only. The last token, which no
// host name has, keeps host "a" from matching the replies of host "a.b".
func InboxPrefix(host string) string { return "_INBOX.foyer." + host + ".~" }

// replyWindow bounds how long, and for how many messages, a host may
// answer a request it received: a CREATE gets an ack, then the room once
// it runs (within the create timeout).
const (
	replyMsgs   = 2
	replyWithin = time.Minute
)

// Permissions are what host may do on the bus: publish its own keys of
// the cluster bucket, claim a range of room ids and write its own mark,
// send requests to any host, make and read the two buckets' streams and
// consumers, and answer the requests it receives; subscribe to its own
// request subjects and its own replies. Nothing else.
func Permissions(host string) *server.Permissions {
	var pub []string
	for _, bucket := range []string{clusterBucket, idsBucket} {
		stream := "KV_" + bucket
		pub = append(pub,
			jsAPI+"STREAM.INFO."+stream,
			jsAPI+"STREAM.CREATE."+stream,
			jsAPI+"CONSUMER.CREATE."+stream,
			jsAPI+"CONSUMER.CREATE."+stream+".>",
			jsAPI+"CONSUMER.INFO."+stream+".*",
			jsAPI+"CONSUMER.DELETE."+stream+".*",
			jsAPI+"DIRECT.GET."+stream,
			jsAPI+"DIRECT.GET."+stream+".>",
			jsAPI+"STREAM.MSG.GET."+stream,
			"$JS.FC."+stream+".>",
		)
	}
	pub = append(pub,
		jsAPI+"INFO", // the account's JetStream limits, asked for before a bucket is made
		kvSubjects+clusterBucket+"."+hostKey(host),
		kvSubjects+clusterBucket+"."+roomsPrefix+host+".*",
		kvSubjects+idsBucket+".ranges.*",
		kvSubjects+idsBucket+"."+ownerKey(host),
		subjectPrefix+">", // requests to any host; only that host receives them
	)
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{
			subjectPrefix + host + ".create",
			subjectPrefix + host + ".join",
			InboxPrefix(host) + ".>",
		}},
		Response: &server.ResponsePermission{MaxMsgs: replyMsgs, Expires: replyWithin},
	}
}

// ServerUser is the block of a nats-server configuration that makes host,
// of public key pub, a user with its Permissions, to go in
// `authorization { users = [ ... ] }`.
func ServerUser(host, pub string) string {
	p := Permissions(host)
	var b strings.Builder
	fmt.Fprintf(&b, "# Foyer host %s\n{\n  nkey: %q\n  permissions: {\n", host, pub)
	fmt.Fprintf(&b, "    publish: {\n      allow: [\n")
	for _, s := range p.Publish.Allow {
		fmt.Fprintf(&b, "        %q\n", s)
	}
	fmt.Fprintf(&b, "      ]\n    }\n    subscribe: {\n      allow: [\n")
	for _, s := range p.Subscribe.Allow {
		fmt.Fprintf(&b, "        %q\n", s)
	}
	fmt.Fprintf(&b, "      ]\n    }\n    allow_responses: { max: %d, expires: %q }\n  }\n}\n", p.Response.MaxMsgs, p.Response.Expires.String())
	return b.String()
}

// seedSuffix ends the name of a host's seed file in KeysDir.
const seedSuffix = ".nk"

// SeedFile is where the embedded server's keys directory keeps host's
// seed.
func SeedFile(keysDir, host string) string { return filepath.Join(keysDir, host+seedSuffix) }

// NewSeedFile makes a new user key and writes its seed to path, a new
// file of mode 0600 (never through a link); it returns the public key.
func NewSeedFile(path string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", err
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", err
	}
	_, err = fmt.Fprintf(f, "%s\n", seed)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return pub, nil
}

// ReadSeed reads the seed file at path, which must be kept from other
// users (no other read, no group or other write), and returns its key
// pair.
func ReadSeed(path string) (nkeys.KeyPair, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o026 != 0 {
		return nil, fmt.Errorf("%s is readable by every user or writable by its group or others (mode %04o): chmod o-rw,g-w %s",
			path, uint32(perm), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		return nil, fmt.Errorf("%s: not an nkey seed: %w", path, err)
	}
	if pub, _ := kp.PublicKey(); !strings.HasPrefix(pub, "U") {
		return nil, fmt.Errorf("%s: not a user's seed", path)
	}
	return kp, nil
}

// hostKeys returns the public key of this host and of each member, from
// their seed files in dir (made where missing); without dir, a key of
// this host kept in memory. The seed of this host is returned too.
func hostKeys(dir, me string, members []string) (pubs map[string]string, mine nkeys.KeyPair, err error) {
	pubs = map[string]string{}
	if dir == "" {
		if len(members) > 0 {
			return nil, nil, errors.New("the members' keys need a directory to be written to (state_dir)")
		}
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, nil, err
		}
		pubs[me], _ = kp.PublicKey()
		return pubs, kp, nil
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, nil, err
	}
	for _, host := range append([]string{me}, members...) {
		path := SeedFile(dir, host)
		kp, err := ReadSeed(path)
		if errors.Is(err, fs.ErrNotExist) {
			if _, err = NewSeedFile(path); err == nil {
				kp, err = ReadSeed(path)
			}
		}
		if err != nil {
			return nil, nil, err
		}
		pubs[host], _ = kp.PublicKey()
		if host == me {
			mine = kp
		}
	}
	return pubs, mine, nil
}
