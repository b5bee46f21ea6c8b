package keeper

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"github.com/foyerlobby/foyer/instance"
	"github.com/foyerlobby/foyer/internal/httpserve"
	"github.com/foyerlobby/foyer/packet"
	"github.com/foyerlobby/foyer/packet/ext"
)

// The local endpoint (probe "endpoint"): a game server in any language
// reports to Foyer through HTTP on a Unix socket the keeper serves in the
// room's directory, which only the room's user reaches. The server finds
// it in its environment (EnvEndpoint) and speaks JSON:
//
//	GET  /v1/room                 the assignment, state, players and metadata
//	POST /v1/ready                ready for players: the room is handed out
//	POST /v1/health               alive (at least once a second; silence past
//	                              the lobby's health_timeout gets the room reaped)
//	POST /v1/players/connect      {"address": "IP:port"}: a player came; 403
//	                              "no_seat" if no seat is held for its IP
//	POST /v1/players/disconnect   {"address": "IP:port"}: a player left
//	POST /v1/seats/verify         {"address": "IP:port"}: whether a seat is held
//	                              for its IP, until when; or {"token": HEX}: whether
//	                              the seat token (as the lobby gave it to the player,
//	                              in hex) is one of this room's, unexpired: its seat
//	                              and until when
//	PUT  /v1/metadata             {"name", "mode", "map", "tags": {KEY: VALUE}}: what
//	                              the lobby's listings say of the room; tags replace
//	                              the room's (at most 4; keys 1-16 of a-z 0-9 _ - .)
//	POST /v1/allocate             the match began: no one joins any more
//	POST /v1/state                {"state": "waiting" | "countdown" | "playing"}
//	POST /v1/shutdown             the room is done: it ends, and its server with it
//
// Every request is a sign of life. Errors are {"error": CODE, "detail":
// TEXT}.

// EnvEndpoint is the variable that gives a kept server the path of its
// endpoint's Unix socket (probe "endpoint" only). The keeper builds the
// server's environment itself: this, HOME, and what the room's
// environment holds.
const EnvEndpoint = "FOYER_ENDPOINT"

// endpointSocket is the socket's name in the room's directory.
const endpointSocket = "endpoint.sock"

// maxEndpointBody bounds a request's body: the largest is a metadata
// update, a few short strings.
const maxEndpointBody = 4 << 10

// endpoint serves one room's server.
type endpoint struct {
	a    instance.Assignment
	r    instance.KeptReporter
	path string
	ln   net.Listener
	srv  *http.Server
	stop context.CancelFunc

	ready chan struct{} // closed by the first /v1/ready
	once  sync.Once

	mu      sync.Mutex
	players map[netip.AddrPort]struct{}
	meta    metadata
}

// metadata is what the server says of its room.
type metadata struct {
	Name string            `json:"name"`
	Mode string            `json:"mode"`
	Map  string            `json:"map"`
	Tags map[string]string `json:"tags,omitempty"`
}

// newEndpoint listens on the socket in dir for the room of a; serve
// starts answering once the reporter is known.
func newEndpoint(dir string, a instance.Assignment) (*endpoint, error) {
	path := filepath.Join(dir, endpointSocket)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("keeper: endpoint: %w", err)
	}
	return &endpoint{a: a, path: path, ln: ln, ready: make(chan struct{}),
		players: make(map[netip.AddrPort]struct{})}, nil
}

// serve answers the server's requests, reporting to r, until close.
func (e *endpoint) serve(r instance.KeptReporter) {
	e.r = r
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/room", e.room)
	mux.HandleFunc("POST /v1/ready", e.markReady)
	mux.HandleFunc("POST /v1/health", e.health)
	mux.HandleFunc("POST /v1/players/connect", e.connect)
	mux.HandleFunc("POST /v1/players/disconnect", e.disconnect)
	mux.HandleFunc("POST /v1/seats/verify", e.verify)
	mux.HandleFunc("PUT /v1/metadata", e.setMetadata)
	mux.HandleFunc("POST /v1/allocate", func(w http.ResponseWriter, _ *http.Request) { e.setState(w, packet.Playing) })
	mux.HandleFunc("POST /v1/state", e.state)
	mux.HandleFunc("POST /v1/shutdown", e.shutdown)
	e.srv = httpserve.New(http.MaxBytesHandler(mux, maxEndpointBody), log.New(io.Discard, "", 0))
	ctx, stop := context.WithCancel(context.Background())
	e.stop = stop
	go func() { _ = httpserve.Serve(ctx, e.srv, e.ln) }()
}

// close stops serving and removes the socket.
func (e *endpoint) close() {
	if e.stop != nil {
		e.stop()
	} else {
		e.ln.Close()
	}
	_ = os.Remove(e.path)
}

// report tells the host what the server says now: every call is a sign
// of life. e.mu is held.
func (e *endpoint) report() {
	e.r.SetDetails(instance.Details{
		Players: len(e.players), MaxPlayers: e.a.MaxPlayers,
		Name: e.meta.Name, Game: e.meta.Mode, Map: e.meta.Map,
	})
}

func (e *endpoint) alive() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.report()
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, errCode, detail string) {
	reply(w, code, map[string]string{"error": errCode, "detail": detail})
}

// decodeBody reads r's JSON body into v, or answers 400 and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "bad_request", err.Error())
		return false
	}
	return true
}

// roomView is GET /v1/room's answer.
type roomView struct {
	RoomID     uint32   `json:"room_id"`
	Port       uint16   `json:"port"`
	MaxPlayers int      `json:"max_players"`
	Bind       string   `json:"bind,omitempty"`
	Ready      bool     `json:"ready"`
	Players    []string `json:"players"`
	Metadata   metadata `json:"metadata"`
}

func (e *endpoint) room(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	v := roomView{RoomID: e.a.RoomID, Port: e.a.Port, MaxPlayers: e.a.MaxPlayers, Metadata: e.meta, Players: []string{}}
	if e.a.Bind.IsValid() {
		v.Bind = e.a.Bind.String()
	}
	for p := range e.players {
		v.Players = append(v.Players, p.String())
	}
	e.report()
	e.mu.Unlock()
	select {
	case <-e.ready:
		v.Ready = true
	default:
	}
	reply(w, http.StatusOK, v)
}

func (e *endpoint) markReady(w http.ResponseWriter, _ *http.Request) {
	e.once.Do(func() { close(e.ready) })
	e.alive()
	w.WriteHeader(http.StatusNoContent)
}

func (e *endpoint) health(w http.ResponseWriter, _ *http.Request) {
	e.alive()
	w.WriteHeader(http.StatusNoContent)
}

// player is the body of the player routes and of a seat's verification.
type player struct {
	Address string `json:"address"`
	Token   string `json:"token"`
}

// address reads a player's address from r's body, or answers and returns
// false.
func address(w http.ResponseWriter, r *http.Request) (netip.AddrPort, bool) {
	var p player
	if !decodeBody(w, r, &p) {
		return netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(p.Address)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_address", `"address" is not "IP:port": `+err.Error())
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

func (e *endpoint) connect(w http.ResponseWriter, r *http.Request) {
	ap, ok := address(w, r)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.report()
	if _, in := e.players[ap]; in {
		reply(w, http.StatusOK, map[string]int{"players": len(e.players)})
		return
	}
	if len(e.players) >= e.a.MaxPlayers {
		fail(w, http.StatusConflict, "full", fmt.Sprintf("the room has its %d players", e.a.MaxPlayers))
		return
	}
	if _, seated := e.r.Seated(ap.Addr()); !seated {
		fail(w, http.StatusForbidden, "no_seat", "no seat is held for "+ap.Addr().String())
		return
	}
	e.players[ap] = struct{}{}
	e.r.PlayerConnected(ap.Addr())
	reply(w, http.StatusOK, map[string]int{"players": len(e.players)})
}

func (e *endpoint) disconnect(w http.ResponseWriter, r *http.Request) {
	ap, ok := address(w, r)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.report()
	if _, in := e.players[ap]; !in {
		fail(w, http.StatusNotFound, "not_connected", ap.String()+" is no player of the room")
		return
	}
	delete(e.players, ap)
	e.r.PlayerDisconnected(ap.Addr())
	reply(w, http.StatusOK, map[string]int{"players": len(e.players)})
}

// verify says whether a player may come in: by the address its datagrams
// come from, or by the seat token it shows the server.
func (e *endpoint) verify(w http.ResponseWriter, r *http.Request) {
	var p player
	if !decodeBody(w, r, &p) {
		return
	}
	e.alive()
	if p.Token != "" {
		b, err := hex.DecodeString(p.Token)
		if err != nil {
			fail(w, http.StatusBadRequest, "bad_token", `"token" is not hex: `+err.Error())
			return
		}
		seat, expires, ok := e.r.SeatToken(b)
		v := map[string]any{"seated": ok}
		if ok {
			v["seat"], v["expires_unix_ms"] = seat, expires.UnixMilli()
		}
		reply(w, http.StatusOK, v)
		return
	}
	ap, err := netip.ParseAddrPort(p.Address)
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_address", `"address" is not "IP:port": `+err.Error())
		return
	}
	expires, seated := e.r.Seated(ap.Addr().Unmap())
	v := map[string]any{"seated": seated}
	if seated {
		v["expires_unix_ms"] = expires.UnixMilli()
	}
	reply(w, http.StatusOK, v)
}

func (e *endpoint) setMetadata(w http.ResponseWriter, r *http.Request) {
	var m metadata
	if !decodeBody(w, r, &m) {
		return
	}
	if !validTags(m.Tags) {
		e.alive()
		fail(w, http.StatusBadRequest, "bad_tags", fmt.Sprintf(`"tags" are at most %d, keys of 1-%d bytes of a-z, 0-9, '_', '-' and '.', values of at most %d bytes`,
			ext.MaxTags, ext.MaxTagKey, ext.MaxTagValue))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.r.(instance.Labeler); ok { // the listings' description (the reporter bounds each text)
		l.SetName(m.Name)
		l.SetMode(m.Mode)
		l.SetMap(m.Map)
		for k := range e.meta.Tags {
			if _, kept := m.Tags[k]; !kept {
				l.SetLabel(k, "")
			}
		}
		for k, v := range m.Tags {
			l.SetLabel(k, v)
		}
	}
	e.meta = m
	e.report()
	w.WriteHeader(http.StatusNoContent)
}

// validTags reports whether tags may describe a room.
func validTags(tags map[string]string) bool {
	if len(tags) > ext.MaxTags {
		return false
	}
	for k, v := range tags {
		if !ext.ValidTagKey(k) || !ext.ValidText(v, ext.MaxTagValue) {
			return false
		}
	}
	return true
}

func (e *endpoint) state(w http.ResponseWriter, r *http.Request) {
	var body struct {
		State string `json:"state"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	for _, s := range []packet.RoomState{packet.Waiting, packet.Countdown, packet.Playing} {
		if s.String() == body.State {
			e.setState(w, s)
			return
		}
	}
	fail(w, http.StatusBadRequest, "bad_state", `"state" is "waiting", "countdown" or "playing" (POST /v1/shutdown ends the room)`)
}

func (e *endpoint) setState(w http.ResponseWriter, s packet.RoomState) {
	e.r.SetState(s)
	e.alive()
	w.WriteHeader(http.StatusNoContent)
}

// shutdown ends the room: the host hears it finished, the instance exits,
// and the server with it.
func (e *endpoint) shutdown(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusNoContent)
	e.r.SetState(packet.Finished)
}
