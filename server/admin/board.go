package admin

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/foyerlobby/foyer/internal/httpserve"
	"github.com/foyerlobby/foyer/room"
	"github.com/foyerlobby/foyer/supervisor"
)

// The board is the page at /: the room table, the request and drop rates
// and the spawn latencies, for a screen across the room at a LAN party or
// a phone. The page is static (HTML, CSS and a script, embedded); its
// script reads one server-sent event stream of JSON frames and draws them
// with textContent and SVG attributes only, so nothing a registrant sends
// is ever parsed as markup.
//
// One goroutine (run) samples the edges' counters every second into a
// fixed ring and follows the room table's changes; every sample and every
// settled burst of changes is a new generation. Streams wait for the next
// generation and write the frame of it, made once for all of them. A slow
// stream only misses generations: nothing queues per stream, and every
// buffer has a fixed size, so a board left open for days costs what it
// cost in its first minute.

const (
	// sampleEvery is the step of the rate plots, and how often an idle
	// table is sent again (which also keeps the streams alive).
	sampleEvery = time.Second
	// ratePoints is the number of steps in the rate plots: five minutes.
	ratePoints = 300
	// settle gathers a burst of table changes into one frame.
	settle = 200 * time.Millisecond
	// maxBoardRooms bounds the rooms in a frame; the rest are counted.
	maxBoardRooms = 200
	// maxEnded rooms that left the table are shown for endedFor.
	maxEnded = 8
	endedFor = time.Minute
	// maxStreams bounds the pages open at once; more get 503 and their
	// script tries again later.
	maxStreams = 32
	// streamRetry is the reconnection delay the stream asks of browsers.
	streamRetry = 2 * time.Second
)

// ring keeps the last len(buf) values pushed.
type ring[T any] struct {
	buf  []T
	next int
	full bool
}

func newRing[T any](n int) ring[T] { return ring[T]{buf: make([]T, n)} }

func (r *ring[T]) push(v T) {
	r.buf[r.next] = v
	if r.next++; r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
}

// appendTo appends the values to dst, oldest first.
func (r *ring[T]) appendTo(dst []T) []T {
	if r.full {
		dst = append(dst, r.buf[r.next:]...)
	}
	return append(dst, r.buf[:r.next]...)
}

// sample is the edges' cumulative counts at one moment.
type sample struct {
	at              time.Time
	requests, drops uint64
}

// endedRoom is a room that left the table, and why.
type endedRoom struct {
	room  room.Room
	cause room.Cause
	at    time.Time
}

// board serves the page and its stream.
type board struct {
	src     Sources
	log     zerolog.Logger
	streams chan struct{} // one token per open stream
	done    chan struct{} // closed when run returns: streams end

	mu       sync.Mutex
	samples  ring[sample]
	ended    ring[endedRoom]
	gen      uint64        // the generation streams should show
	changed  chan struct{} // closed when gen moves on
	frame    []byte        // the frame of frameGen
	frameGen uint64

	build sync.Mutex // one frame is made at a time, for every stream
}

// newBoard takes the first sample of the edges' counts at once: whatever
// is counted after the board exists shows in its rates, even before run
// is scheduled.
func newBoard(src Sources, log zerolog.Logger) *board {
	b := &board{src: src, log: log, streams: make(chan struct{}, maxStreams), done: make(chan struct{}),
		samples: newRing[sample](ratePoints + 1), ended: newRing[endedRoom](maxEnded), changed: make(chan struct{})}
	b.sample(time.Now())
	return b
}

// run samples and follows the table until ctx is done, then ends the
// streams.
func (b *board) run(ctx context.Context) {
	defer close(b.done)
	var events <-chan room.Event
	if b.src.Watch != nil {
		events = b.src.Watch(ctx)
	}
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	settled := time.NewTimer(settle)
	settled.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			b.sample(now)
			b.publish()
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Kind == room.Reaped {
				b.mu.Lock()
				b.ended.push(endedRoom{room: ev.Room, cause: ev.Cause, at: time.Now()})
				b.mu.Unlock()
			}
			if !pending {
				pending = true
				settled.Reset(settle)
			}
		case <-settled.C:
			pending = false
			b.publish()
		}
	}
}

// sample records the edges' counts now.
func (b *board) sample(now time.Time) {
	s := sample{at: now}
	if b.src.Lobby != nil {
		st := b.src.Lobby()
		s.requests += sum(st.Requests)
		s.drops += sum(st.Drops)
	}
	if b.src.GG2 != nil {
		st := b.src.GG2()
		s.requests += sum(st.Requests)
		s.drops += sum(st.Drops)
	}
	if b.src.Gunz != nil {
		st := b.src.Gunz()
		s.requests += sum(st.Requests)
		s.drops += sum(st.Drops)
	}
	b.mu.Lock()
	b.samples.push(s)
	b.mu.Unlock()
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// publish starts a new generation and wakes the streams.
func (b *board) publish() {
	b.mu.Lock()
	b.gen++
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// current returns the frame of the current generation, making it if no
// stream has yet, and the channel closed when the next one begins.
func (b *board) current() (frame []byte, gen uint64, changed <-chan struct{}) {
	b.mu.Lock()
	gen, changed = b.gen, b.changed
	if b.frame != nil && b.frameGen == gen {
		frame = b.frame
	}
	b.mu.Unlock()
	if frame != nil {
		return frame, gen, changed
	}
	b.build.Lock()
	defer b.build.Unlock()
	b.mu.Lock()
	if b.frame != nil && b.frameGen == gen { // another stream made it meanwhile
		frame = b.frame
	}
	samples := b.samples.appendTo(make([]sample, 0, ratePoints+1))
	ended := b.ended.appendTo(make([]endedRoom, 0, maxEnded))
	b.mu.Unlock()
	if frame != nil {
		return frame, gen, changed
	}
	frame = b.render(time.Now(), samples, ended)
	b.mu.Lock()
	if gen >= b.frameGen {
		b.frame, b.frameGen = frame, gen
	}
	b.mu.Unlock()
	return frame, gen, changed
}

// frameJSON is one event of the stream.
type frameJSON struct {
	// Version is the room table's version.
	Version uint64 `json:"version"`
	// Rooms are the listed rooms, oldest first, at most maxBoardRooms;
	// More counts those left out.
	Rooms []roomJSON `json:"rooms"`
	More  int        `json:"more"`
	// Ended are the rooms that left the table lately, newest first.
	Ended  []endedJSON `json:"ended"`
	Totals totalsJSON  `json:"totals"`
	// Actions is set when the listener stops rooms and drains the host:
	// the page shows its buttons.
	Actions bool         `json:"actions"`
	Rates   ratesJSON    `json:"rates"`
	Spawn   *latencyJSON `json:"spawn,omitempty"`
}

// endedJSON is a room that left the table: its last row, why it left and
// how long ago.
type endedJSON struct {
	roomJSON
	Cause           string  `json:"cause"`
	EndedSecondsAgo float64 `json:"ended_seconds_ago"`
}

// totalsJSON sums the whole table, and the supervisor's pool.
type totalsJSON struct {
	Rooms      int            `json:"rooms"`
	Players    int            `json:"players"` // occupied places, as every listing counts them
	MaxPlayers int            `json:"max_players"`
	States     map[string]int `json:"states"`
	Warm       int            `json:"warm"`
	Spawning   int            `json:"spawning"`
	Draining   bool           `json:"draining"`
}

// ratesJSON are the requests and drops per second of every edge, one value
// per step, oldest first; Points is how many steps a full plot has.
type ratesJSON struct {
	StepSeconds float64   `json:"step_seconds"`
	Points      int       `json:"points"`
	Requests    []float64 `json:"requests"`
	Drops       []float64 `json:"drops"`
}

// latencyJSON is the spawn-latency histogram: one count per bucket, with
// the bucket's upper bound (the last bucket is ">" the last bound), and the
// buckets that hold the median and the 95th percentile.
type latencyJSON struct {
	Buckets []string `json:"buckets"`
	Counts  []uint64 `json:"counts"`
	Count   uint64   `json:"count"`
	MeanMS  float64  `json:"mean_ms"`
	P50     string   `json:"p50"`
	P95     string   `json:"p95"`
}

// render makes the frame of the table now, the samples and the ended
// rooms.
func (b *board) render(now time.Time, samples []sample, ended []endedRoom) []byte {
	snap := b.src.snapshot()
	rows := roomTable(snap, b.src.usage(snap), now).Rooms
	slices.SortFunc(rows, func(a, b roomJSON) int { return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID)) })
	f := frameJSON{Version: snap.Version, Ended: []endedJSON{}, Rates: rates(samples),
		Actions: b.src.StopRoom != nil && b.src.Drain != nil && b.src.Supervisor != nil}
	f.Totals.States = make(map[string]int, len(roomStates))
	for _, st := range roomStates {
		f.Totals.States[st.String()] = 0
	}
	for _, r := range snap.Rooms {
		f.Totals.Rooms++
		f.Totals.Players += r.Occupied()
		f.Totals.MaxPlayers += r.MaxPlayers
		f.Totals.States[r.State.String()]++
	}
	if len(rows) > maxBoardRooms {
		f.More = len(rows) - maxBoardRooms
		rows = rows[:maxBoardRooms]
	}
	f.Rooms = rows
	for _, e := range slices.Backward(ended) {
		if now.Sub(e.at) < endedFor {
			f.Ended = append(f.Ended, endedJSON{roomJSON: roomRow(e.room, e.at), Cause: string(e.cause),
				EndedSecondsAgo: now.Sub(e.at).Truncate(time.Second).Seconds()})
		}
	}
	if b.src.Supervisor != nil {
		st := b.src.Supervisor()
		f.Totals.Warm, f.Totals.Spawning, f.Totals.Draining = st.Warm, st.Spawning, st.Draining
		f.Spawn = latency(st.SpawnLatency)
	}
	out, err := json.Marshal(f)
	if err != nil { // only plain values: cannot happen
		panic(fmt.Sprintf("admin: board frame: %v", err))
	}
	return out
}

// rates turns successive samples into per-second rates, rounded to a
// tenth.
func rates(samples []sample) ratesJSON {
	r := ratesJSON{StepSeconds: sampleEvery.Seconds(), Points: ratePoints, Requests: []float64{}, Drops: []float64{}}
	for i := 1; i < len(samples); i++ {
		prev, s := samples[i-1], samples[i]
		secs := s.at.Sub(prev.at).Seconds()
		if secs <= 0 {
			continue
		}
		r.Requests = append(r.Requests, perSecond(prev.requests, s.requests, secs))
		r.Drops = append(r.Drops, perSecond(prev.drops, s.drops, secs))
	}
	return r
}

func perSecond(from, to uint64, secs float64) float64 {
	if to < from {
		return 0
	}
	return math.Round(float64(to-from)/secs*10) / 10
}

// latency is the board's view of the spawn-latency histogram.
func latency(h supervisor.Histogram) *latencyJSON {
	l := &latencyJSON{Buckets: make([]string, 0, len(supervisor.SpawnBuckets)+1), Counts: make([]uint64, len(supervisor.SpawnBuckets)+1)}
	for _, bound := range supervisor.SpawnBuckets {
		l.Buckets = append(l.Buckets, bound.String())
	}
	l.Buckets = append(l.Buckets, ">"+supervisor.SpawnBuckets[len(supervisor.SpawnBuckets)-1].String())
	for i, n := range h.Counts {
		if i < len(l.Counts) {
			l.Counts[i] = n
			l.Count += n
		}
	}
	if l.Count > 0 {
		l.MeanMS = math.Round(float64(h.Sum)/float64(l.Count)/float64(time.Millisecond)*10) / 10
	}
	l.P50, l.P95 = l.quantile(0.5), l.quantile(0.95)
	return l
}

// quantile names the bucket that holds the q-quantile, as "≤50ms" or
// ">5s"; "" with no observations.
func (l *latencyJSON) quantile(q float64) string {
	if l.Count == 0 {
		return ""
	}
	want := uint64(math.Ceil(q * float64(l.Count)))
	var seen uint64
	for i, n := range l.Counts[:len(l.Counts)-1] {
		if seen += n; seen >= want {
			return "≤" + l.Buckets[i]
		}
	}
	return l.Buckets[len(l.Buckets)-1]
}

// stream is the board's event stream: a frame at once and one per
// generation, until the client leaves or the server stops.
func (b *board) stream(w http.ResponseWriter, r *http.Request) {
	select {
	case b.streams <- struct{}{}:
		defer func() { <-b.streams }()
	default:
		b.log.Debug().Msg("board stream refused: too many open")
		w.Header().Set("Retry-After", "10")
		http.Error(w, "too many boards open", http.StatusServiceUnavailable)
		return
	}
	// The server's write timeout is for one answer; a stream lasts as
	// long as the page is open, so each write gets a deadline of its own.
	// (Its read deadline is already lifted: once a request without a body
	// is read, the server only watches the connection for its end.)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold frames back
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	b.log.Debug().Str("remote", r.RemoteAddr).Msg("board stream opened")
	defer b.log.Debug().Str("remote", r.RemoteAddr).Msg("board stream closed")
	rc.SetWriteDeadline(time.Now().Add(httpserve.WriteTimeout))
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", streamRetry.Milliseconds()); err != nil {
		return
	}
	sent, first := uint64(0), true
	for {
		frame, gen, changed := b.current()
		if first || gen != sent {
			rc.SetWriteDeadline(time.Now().Add(httpserve.WriteTimeout))
			if !writeEvent(w, frame) || rc.Flush() != nil {
				return
			}
			sent, first = gen, false
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-b.done:
			return
		}
	}
}

// writeEvent writes frame, JSON without newlines, as one event.
func writeEvent(w http.ResponseWriter, frame []byte) bool {
	for _, part := range [][]byte{[]byte("data: "), frame, []byte("\n\n")} {
		if _, err := w.Write(part); err != nil {
			return false
		}
	}
	return true
}

// The page's files, served as they are.
//
//go:embed board/index.html board/board.css board/board.js board/login.html
var boardFiles embed.FS

// boardFile is one of the page's files and its type.
type boardFile struct {
	body        []byte
	contentType string
}

func mustBoardFile(name, contentType string) boardFile {
	b, err := boardFiles.ReadFile("board/" + name)
	if err != nil {
		panic(err)
	}
	return boardFile{b, contentType}
}

var (
	boardPage   = mustBoardFile("index.html", "text/html; charset=utf-8")
	boardStyle  = mustBoardFile("board.css", "text/css; charset=utf-8")
	boardScript = mustBoardFile("board.js", "text/javascript; charset=utf-8")
)

// boardPolicy lets the page run its own script and style and reach its
// own stream, and nothing else: no inline script, no other origin, no
// frames; with Trusted Types, assigning markup from a string (innerHTML
// and its kin) throws, so even a mistake in the script cannot turn a
// room's name into markup.
const boardPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// ServeHTTP answers with f, under the board's policy.
func (f boardFile) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Security-Policy", boardPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.Write(f.body)
}
