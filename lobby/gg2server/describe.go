package gg2server

import (
	"github.com/foyerlobby/foyer/lobby/web"
	"github.com/foyerlobby/foyer/room"
)

// Generation implements web.Describer: it changes whenever a server's
// description may have, as it changes with whatever a list shows.
func (s *Server) Generation() uint64 {
	t := &s.table
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen
}

// Describe implements web.Describer: the lobby, bots, game version and
// game URL of the rooms this front-end registered.
func (s *Server) Describe(rooms []room.Room, each func(i int, d web.Details)) {
	t := &s.table
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, r := range rooms {
		if e := t.byRoom[r.ID]; e != nil {
			each(i, web.Details{Lobby: e.lobby, Bots: int(e.bots), GameVersion: e.gameVersion, GameURL: e.gameURL})
		}
	}
}
