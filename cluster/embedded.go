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
// cluster then needs nothing installed. It has no TLS and no accounts:
// keep it on a network only the hosts reach.
func (c *Cluster) startEmbedded() error {
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
	s, err := server.NewServer(&server.Options{
		ServerName: c.me, Host: host, Port: p, JetStream: true, StoreDir: dir, NoSigs: true,
	})
	if err != nil {
		return fmt.Errorf("cluster: embedded server: %w", err)
	}
	s.SetLoggerV2(natsLog{c.log.With().Str("server", "nats").Logger()}, false, false, false)
	s.Start()
	c.srv = s
	if !s.ReadyForConnections(c.cfg.ConnectTimeout) {
		return fmt.Errorf("cluster: embedded server on %s not ready within %v", c.cfg.Embedded, c.cfg.ConnectTimeout)
	}
	c.log.Info().Str("listen", c.cfg.Embedded).Str("store", dir).Msg("embedded NATS server running")
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
