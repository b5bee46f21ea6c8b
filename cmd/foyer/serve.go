package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/config"
	"github.com/foyerlobby/foyer/lobby"
	"github.com/foyerlobby/foyer/supervisor"
)

// shutdownLimit bounds how long stopping the instances may take after
// SIGINT/SIGTERM; the supervisor's own stop_grace applies per instance.
const shutdownLimit = 30 * time.Second

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "", "config file (TOML); built-in defaults when empty")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: foyer serve [--config PATH]")
		fmt.Fprintln(w, "\nRun the lobby (UDP, native protocol) and the supervisor of its rooms")
		fmt.Fprintln(w, "until SIGINT or SIGTERM, which stop every room before exiting. Every")
		fmt.Fprintln(w, "config key and its default is documented in config.toml.\n\nFlags:")
		fs.PrintDefaults()
		fmt.Fprintln(w, "\nExample:\n  foyer serve --config config.toml")
	}
	// Asked-for help goes to stdout; usage after a mistake to stderr.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	case err != nil:
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, "foyer serve: %v\n", err)
		fs.Usage()
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "foyer serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg := config.Default()
	if *path != "" {
		if cfg, err = config.Load(*path); err != nil {
			fmt.Fprintf(stderr, "foyer serve: %v\n", err)
			return 1
		}
	}
	log := newLogger(cfg.Log, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, log); err != nil {
		log.Error().Err(err).Msg("serve failed")
		return 1
	}
	return 0
}

// serve runs until ctx is done, then stops taking CREATEs, stops every
// instance and closes the lobby.
func serve(ctx context.Context, cfg config.Config, log zerolog.Logger) error {
	cfg.Supervisor.Log = log
	cfg.Lobby.Log = log
	sup, err := supervisor.New(cfg.Supervisor)
	if err != nil {
		return err
	}
	l, err := lobby.New(cfg.Lobby, sup)
	if err != nil {
		shutdown(sup, log)
		return err
	}
	lobbyCtx, closeLobby := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.Serve(lobbyCtx) }()
	log.Info().Stringers("listen", stringers(l.Addrs())).Msg("lobby listening")
	select {
	case <-ctx.Done():
	case err = <-served: // a socket failed: stop everything
	}
	log.Info().Msg("shutting down")
	l.Drain()
	shutdown(sup, log)
	closeLobby()
	if err == nil {
		err = <-served
	}
	return err
}

func shutdown(sup *supervisor.Supervisor, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer cancel()
	if err := sup.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("supervisor shutdown")
	}
}

func stringers[T fmt.Stringer](v []T) []fmt.Stringer {
	out := make([]fmt.Stringer, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

func newLogger(c config.Log, w io.Writer) zerolog.Logger {
	if c.Format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	}
	return zerolog.New(w).Level(c.Level).With().Timestamp().Logger()
}
