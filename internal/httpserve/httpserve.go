// Package httpserve is how Foyer's HTTP listeners serve: bounded time for
// every request, since every page is small and made at once, so a client
// slower than the bounds is gone or hostile; and a stop that lets the
// requests in progress finish, for a while.
package httpserve

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"time"
)

// The bounds of every request.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	WriteTimeout      = 10 * time.Second
	IdleTimeout       = 60 * time.Second
	MaxHeaderBytes    = 8 << 10
	// ShutdownTimeout is how long requests in progress get to finish
	// once the listener stops.
	ShutdownTimeout = 5 * time.Second
)

// New returns a server of h with those bounds; errLog gets the errors the
// server logs itself. Callers may change fields before serving.
func New(h http.Handler, errLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          errLog,
	}
}

// Serve serves srv on ln until ctx is done, then closes ln and lets the
// requests in progress finish, for up to ShutdownTimeout, before it cuts
// the rest. It returns nil after ctx ends, and the listener's error if it
// fails first.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
	})
	defer stop()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
