package cluster

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// startEmbedded runs a NATS server with JetStream in this process, on
// Embedded, storing under StoreDir (or a temporary directory): a small
// cluster then needs nothing installed. It lets in only the hosts it has
// keys for (this one and Members, see auth.go), each with its own
// Permissions, and speaks TLS only with ServerTLSCert.
func (c *Cluster) startEmbedded() error {
	pubs, mine, err := hostKeys(c.cfg.KeysDir, c.me, c.cfg.Members)
	if err != nil {
		return fmt.Errorf("cluster: embedded server's keys: %w", err)
	}
	c.key = mine
	var users []*server.NkeyUser
	for _, host := range append([]string{c.me}, c.cfg.Members...) {
		users = append(users, &server.NkeyUser{Nkey: pubs[host], Permissions: Permissions(host)})
	}
	host, port, err := net.SplitHostPort(c.cfg.Embedded)
	if err != nil {
		return fmt.Errorf("cluster: embedded %q: %w", c.cfg.Embedded, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("cluster: embedded %q: port: %w", c.cfg.Embedded, err)
	}
	dir := c.cfg.StoreDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "foyer-nats-"); err != nil {
			return fmt.Errorf("cluster: embedded store: %w", err)
		}
		c.storeTmp = dir
	}
	opts := &server.Options{
		ServerName: c.me, Host: host, Port: p, JetStream: true, StoreDir: dir, NoSigs: true,
		Nkeys: users,
		// A server only this host's process uses has no business with
		// the system account's monitoring.
		NoSystemAccount: true,
	}
	if c.cfg.ServerTLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: c.cfg.ServerTLSCert, KeyFile: c.cfg.ServerTLSKey})
		if err != nil {
			return fmt.Errorf("cluster: embedded server's TLS: %w", err)
		}
		opts.TLSConfig, opts.TLS, opts.TLSTimeout = tc, true, 2
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("cluster: embedded server: %w", err)
	}
	s.SetLoggerV2(natsLog{c.log.With().Str("server", "nats").Logger()}, false, false, false)
	s.Start()
	c.srv = s
	if !s.ReadyForConnections(c.cfg.ConnectTimeout) {
		return fmt.Errorf("cluster: embedded server on %s not ready within %v", c.cfg.Embedded, c.cfg.ConnectTimeout)
	}
	c.log.Info().Str("listen", c.cfg.Embedded).Str("store", dir).Strs("hosts", append([]string{c.me}, c.cfg.Members...)).
		Str("keys", c.cfg.KeysDir).Bool("tls", opts.TLS).Msg("embedded NATS server running: only the hosts with keys are let in")
	return nil
}

// natsLog passes the embedded server's log to zerolog: its notices (a
// dozen lines at start) at debug, its warnings and errors as such.
type natsLog struct{ log zerolog.Logger }

func (l natsLog) Noticef(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l natsLog) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l natsLog) Fatalf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l natsLog) Errorf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l natsLog) Debugf(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }
func (l natsLog) Tracef(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }
