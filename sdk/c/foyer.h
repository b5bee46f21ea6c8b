/* foyer.h: a client of Foyer game lobbies in one C99 header.
 *
 * List a lobby's rooms, create one or join one, and get a seat: where the
 * room's game server listens. Every request is one UDP datagram answered
 * by one; it is sent up to `attempts` times, `timeout_ms` apart, with the
 * same sequence id, so a lobby that already acted on it answers from its
 * retry cache instead of acting twice. Replies are matched by sequence id;
 * anything else reaching the socket (strays, bad CRCs) is dropped.
 *
 * In exactly one C or C++ file, define FOYER_IMPLEMENTATION before the
 * first #include of any header, then include this one:
 *
 *     #define FOYER_IMPLEMENTATION
 *     #include "foyer.h"
 *
 * Nothing is allocated on the request path: a foyer_client holds its
 * buffers (about 128 KiB: keep it static or on the heap), the caller
 * gives the room array. A client is for one thread at a time. POSIX
 * sockets (Linux, macOS, the BSDs).
 */
#if defined(FOYER_IMPLEMENTATION) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#ifndef FOYER_H
#define FOYER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FOYER_DEFAULT_TIMEOUT_MS 5000
#define FOYER_DEFAULT_ATTEMPTS 3
#define FOYER_MAX_ROOMS 5037
#define FOYER_MAX_PAYLOAD 65535
#define FOYER_MAX_DATAGRAM (17 + FOYER_MAX_PAYLOAD + 4)

typedef enum { FOYER_COMPACT = 0, FOYER_LEGACY = 1 } foyer_framing;

typedef enum {
    FOYER_LIST_ROOMS = 0x40, FOYER_ROOM_LIST = 0x41, FOYER_CREATE_ROOM = 0x42,
    FOYER_ROOM_CREATED = 0x43, FOYER_JOIN_ROOM = 0x44, FOYER_JOIN_SUCCESS = 0x45,
    FOYER_JOIN_FAILED = 0x46
} foyer_type;

typedef enum { FOYER_WAITING = 0, FOYER_COUNTDOWN = 1, FOYER_PLAYING = 2, FOYER_FINISHED = 3 } foyer_state;

/* What the requests return: FOYER_OK or one of these. */
typedef enum {
    FOYER_OK = 0,
    FOYER_ETIMEOUT = -1,     /* no attempt got its reply in time */
    FOYER_EREFUSED = -2,     /* the lobby said no (JOIN_FAILED): foyer_client.reason says why */
    FOYER_EUNREACHABLE = -3, /* nothing listens on the lobby's port (port unreachable) */
    FOYER_ENOTSUP = -4,      /* needs Foyer's protocol extension, which this lobby does not speak */
    FOYER_ESYS = -5,         /* a system call failed: errno says why */
    FOYER_EINVAL = -6        /* a bad argument, or an address that does not resolve */
} foyer_error;

/* Why a lobby refused. A seed lobby never says: FOYER_REASON_UNSPECIFIED. */
typedef enum {
    FOYER_REASON_UNSPECIFIED = 0, FOYER_REASON_NOT_FOUND, FOYER_REASON_FULL,
    FOYER_REASON_STARTED, FOYER_REASON_WRONG_PASSWORD, FOYER_REASON_QUOTA,
    FOYER_REASON_RATE_LIMITED, FOYER_REASON_NO_CAPACITY, FOYER_REASON_DRAINING,
    FOYER_REASON_DENIED
} foyer_reason;

/* What foyer_decode returns: 0, or the first rule of docs/protocol.md a
 * datagram breaks, in the order it checks them. */
typedef enum {
    FOYER_MALFORMED_SHORT = 1, FOYER_MALFORMED_MAGIC, FOYER_MALFORMED_LENGTH,
    FOYER_MALFORMED_CRC, FOYER_MALFORMED_PACKET_TYPE, FOYER_MALFORMED_UNKNOWN_TYPE,
    FOYER_MALFORMED_DIRECTION, FOYER_MALFORMED_COMPRESSION, FOYER_MALFORMED_PAYLOAD_SIZE,
    FOYER_MALFORMED_ROOM_COUNT, FOYER_MALFORMED_ROOM_STATE
} foyer_malformed;

typedef struct {
    uint32_t id;
    uint16_t players, max_players, port;
    foyer_state state;
} foyer_room;

/* A place the lobby holds for this client: send the game traffic to
 * address:port. The token and its expiry come with the extension (empty,
 * 0 from a seed lobby). */
typedef struct {
    uint32_t room;
    char address[46];
    uint16_t port;
    uint8_t token[64];
    size_t token_len;
    int64_t expires_unix_ms;
} foyer_seat;

typedef struct {
    int timeout_ms;          /* per attempt; 0: FOYER_DEFAULT_TIMEOUT_MS */
    int attempts;            /* 0: FOYER_DEFAULT_ATTEMPTS */
    foyer_framing framing;   /* what requests are written in; replies are read in either */
} foyer_options;

/* Which rooms foyer_list and foyer_quick_join want. A seed lobby lists
 * every room: `state` (when has_state) and `free_seats` are applied here;
 * the others need the extension (NULL or 0 when unused). */
typedef struct {
    int has_state;
    foyer_state state;
    int free_seats;
    const char *mode, *map, *name_prefix;
    const char *const *tags; /* "key=value" */
    size_t tag_count;
} foyer_filter;

/* What a new room is to be; a seed lobby takes none of it. */
typedef struct {
    const char *name, *mode, *map, *password;
    const char *const *tags; /* "key=value" */
    size_t tag_count;
    int private_room;
} foyer_create_options;

/* One decoded datagram. payload points into the datagram, or into the
 * scratch buffer when it was compressed. */
typedef struct {
    foyer_framing framing;
    foyer_type type;
    uint16_t seq;
    uint32_t tick;
    int compressed;
    uint32_t room;
    uint16_t port;
    size_t room_count;
    const uint8_t *payload;
    size_t payload_len;
} foyer_message;

typedef struct {
    int fd;
    int timeout_ms, attempts;
    foyer_framing framing;
    uint16_t seq;
    int answered;        /* the lobby answered once: it has seen this client receive */
    foyer_reason reason; /* why the last request was refused */
    char address[46];    /* the lobby's IP: where its rooms are */
    uint8_t buf[FOYER_MAX_DATAGRAM];
    uint8_t scratch[FOYER_MAX_PAYLOAD];
} foyer_client;

/* Resolves host and port and opens a socket to the lobby there; opt may be NULL. */
int foyer_open(foyer_client *c, const char *host, const char *port, const foyer_options *opt);
void foyer_close(foyer_client *c);
/* The rooms f matches (f may be NULL), at most cap of them into rooms;
 * *count is how many matched, which may exceed cap. */
int foyer_list(foyer_client *c, const foyer_filter *f, foyer_room *rooms, size_t cap, size_t *count);
/* Starts a room and holds a seat in it; opt may be NULL. */
int foyer_create(foyer_client *c, const foyer_create_options *opt, foyer_seat *seat);
int foyer_join(foyer_client *c, uint32_t room, foyer_seat *seat);
int foyer_join_code(foyer_client *c, const char *code, const char *password, foyer_seat *seat);
int foyer_quick_join(foyer_client *c, const foyer_filter *f, foyer_seat *seat);
const char *foyer_strerror(int err);
const char *foyer_reason_name(foyer_reason r);

/* The codec. */
uint32_t foyer_crc32(const uint8_t *b, size_t n);
/* Writes a LIST_ROOMS, CREATE_ROOM or JOIN_ROOM (room) request into out;
 * returns its length, or 0 if cap is too small or t is no request. */
size_t foyer_encode_request(uint8_t *out, size_t cap, foyer_framing f, foyer_type t,
                            uint16_t seq, uint32_t tick, uint32_t room);
/* Checks one datagram and fills m, and at most cap rooms of a ROOM_LIST;
 * scratch (FOYER_MAX_PAYLOAD bytes) takes a compressed payload. Returns 0
 * or a foyer_malformed. */
int foyer_decode(const uint8_t *b, size_t n, foyer_message *m, foyer_room *rooms, size_t cap,
                 uint8_t *scratch);
const char *foyer_malformed_name(int why);
/* Inflates one LZ4 block into exactly size bytes of dst; 0 or -1. */
int foyer_lz4_decompress(const uint8_t *src, size_t n, uint8_t *dst, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* FOYER_H */

#ifdef FOYER_IMPLEMENTATION
#ifndef FOYER_IMPLEMENTED
#define FOYER_IMPLEMENTED

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

static const uint8_t foyer__magic[4] = {0xA3, 0x5F, 0xC8, 0x1D};

static uint16_t foyer__u16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t foyer__u32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void foyer__put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void foyer__put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

uint32_t foyer_crc32(const uint8_t *b, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int k;
    for (i = 0; i < n; i++) {
        c ^= b[i];
        for (k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

size_t foyer_encode_request(uint8_t *out, size_t cap, foyer_framing f, foyer_type t,
                            uint16_t seq, uint32_t tick, uint32_t room) {
    size_t hl = f == FOYER_LEGACY ? 17 : 8, n = t == FOYER_JOIN_ROOM ? 4 : 0;
    if (t != FOYER_LIST_ROOMS && t != FOYER_CREATE_ROOM && t != FOYER_JOIN_ROOM) return 0;
    if (cap < hl + n + 4) return 0;
    if (f == FOYER_LEGACY) {
        memcpy(out, foyer__magic, 4);
        out[4] = 1; out[5] = 1; out[6] = (uint8_t)t;
        foyer__put16(out + 7, seq);
        foyer__put32(out + 9, tick);
        foyer__put16(out + 13, (uint16_t)n);
        foyer__put16(out + 15, (uint16_t)n);
    } else {
        out[0] = 1; out[1] = (uint8_t)t;
        foyer__put16(out + 2, seq);
        foyer__put16(out + 4, (uint16_t)n);
        foyer__put16(out + 6, (uint16_t)n);
    }
    if (n) foyer__put32(out + hl, room);
    foyer__put32(out + hl + n, foyer_crc32(out, hl + n));
    return hl + n + 4;
}

/* foyer__length adds LZ4's 255-continued length bytes to *len. */
static int foyer__length(const uint8_t *src, size_t n, size_t *i, size_t *len) {
    uint8_t x;
    do {
        if (*i >= n) return -1;
        x = src[(*i)++];
        *len += x;
    } while (x == 255);
    return 0;
}

int foyer_lz4_decompress(const uint8_t *src, size_t n, uint8_t *dst, size_t size) {
    size_t i = 0, o = 0, lit, ml, off;
    uint8_t token;
    for (;;) {
        if (i >= n) return -1;
        token = src[i++];
        lit = token >> 4;
        if (lit == 15 && foyer__length(src, n, &i, &lit) < 0) return -1;
        if (lit > n - i || lit > size - o) return -1;
        memcpy(dst + o, src + i, lit);
        i += lit;
        o += lit;
        if (i == n) break; /* the last sequence is literals only */
        if (n - i < 2) return -1;
        off = (size_t)src[i] | (size_t)src[i + 1] << 8;
        i += 2;
        ml = token & 15;
        if (ml == 15 && foyer__length(src, n, &i, &ml) < 0) return -1;
        ml += 4;
        if (off == 0 || off > o || ml > size - o) return -1;
        for (; ml > 0; ml--, o++) dst[o] = dst[o - off]; /* a match may overlap what it writes */
    }
    return o == size ? 0 : -1;
}

static int foyer__request(int t) { return t == FOYER_LIST_ROOMS || t == FOYER_CREATE_ROOM || t == FOYER_JOIN_ROOM; }

static int foyer__holds(int t, size_t n) {
    switch (t) {
    case FOYER_JOIN_ROOM: return n == 4;
    case FOYER_ROOM_CREATED: case FOYER_JOIN_SUCCESS: return n == 6;
    case FOYER_ROOM_LIST: return n >= 2 && (n - 2) % 11 == 0;
    default: return n == 0;
    }
}

static void foyer__room(const uint8_t *e, foyer_room *r) {
    r->id = foyer__u32(e);
    r->players = foyer__u16(e + 4);
    r->max_players = foyer__u16(e + 6);
    r->port = foyer__u16(e + 8);
    r->state = (foyer_state)e[10];
}

int foyer_decode(const uint8_t *b, size_t len, foyer_message *m, foyer_room *rooms, size_t cap,
                 uint8_t *scratch) {
    int legacy = len > 0 && b[0] == 0xA3, flagged = 0, dir, t;
    size_t hl = legacy ? 17 : 8, n, original, i;
    const uint8_t *sizes, *p;
    memset(m, 0, sizeof *m);
    if (len < hl + 4) return FOYER_MALFORMED_SHORT;
    if (legacy) {
        if (memcmp(b, foyer__magic, 4) != 0 || (b[4] & 0x7F) != 1) return FOYER_MALFORMED_MAGIC;
        flagged = (b[4] & 0x80) != 0;
        dir = b[5];
        t = b[6];
        m->seq = foyer__u16(b + 7);
        m->tick = foyer__u32(b + 9);
        sizes = b + 13;
    } else {
        dir = b[0];
        t = b[1];
        m->seq = foyer__u16(b + 2);
        sizes = b + 4;
    }
    n = foyer__u16(sizes);
    original = foyer__u16(sizes + 2);
    if (len != hl + n + 4) return FOYER_MALFORMED_LENGTH;
    if (foyer__u32(b + hl + n) != foyer_crc32(b, hl + n)) return FOYER_MALFORMED_CRC;
    if (dir != 1 && dir != 2) return FOYER_MALFORMED_PACKET_TYPE;
    if (t < 0x40 || t > 0x46) return FOYER_MALFORMED_UNKNOWN_TYPE;
    if ((dir == 1) != foyer__request(t)) return FOYER_MALFORMED_DIRECTION;
    if (legacy && !flagged && original == 0) original = n; /* the original game's encoder leaves it 0 */
    m->compressed = original > n;
    if (original < n || (legacy && flagged != m->compressed)) return FOYER_MALFORMED_COMPRESSION;
    p = b + hl;
    if (m->compressed) {
        if (!foyer__holds(t, original) || original > 255 * n + 16 ||
            foyer_lz4_decompress(p, n, scratch, original) != 0)
            return FOYER_MALFORMED_COMPRESSION;
        p = scratch;
        n = original;
    }
    m->framing = legacy ? FOYER_LEGACY : FOYER_COMPACT;
    m->type = (foyer_type)t;
    m->payload = p;
    m->payload_len = n;
    if (t == FOYER_ROOM_LIST) {
        if (n < 2 || n != 2 + 11 * (size_t)foyer__u16(p)) return FOYER_MALFORMED_PAYLOAD_SIZE;
        m->room_count = foyer__u16(p);
        if (m->room_count > FOYER_MAX_ROOMS) return FOYER_MALFORMED_ROOM_COUNT;
        for (i = 0; i < m->room_count; i++)
            if (p[2 + 11 * i + 10] > FOYER_FINISHED) return FOYER_MALFORMED_ROOM_STATE;
        for (i = 0; i < m->room_count && i < cap; i++) foyer__room(p + 2 + 11 * i, &rooms[i]);
        return 0;
    }
    if (!foyer__holds(t, n)) return FOYER_MALFORMED_PAYLOAD_SIZE;
    if (n >= 4) m->room = foyer__u32(p);
    if (n == 6) m->port = foyer__u16(p + 4);
    return 0;
}

const char *foyer_malformed_name(int why) {
    static const char *const names[] = {"", "short", "magic", "length", "crc", "packet_type",
                                        "unknown_type", "direction", "compression",
                                        "payload_size", "room_count", "room_state"};
    return why >= 0 && why <= FOYER_MALFORMED_ROOM_STATE ? names[why] : "unknown";
}

const char *foyer_strerror(int err) {
    switch (err) {
    case FOYER_OK: return "ok";
    case FOYER_ETIMEOUT: return "timeout: no reply after every attempt";
    case FOYER_EREFUSED: return "the lobby refused (JOIN_FAILED)";
    case FOYER_EUNREACHABLE: return "nothing listens on the lobby's port (port unreachable)";
    case FOYER_ENOTSUP: return "not supported by this lobby";
    case FOYER_ESYS: return "system error (see errno)";
    case FOYER_EINVAL: return "invalid argument";
    }
    return "unknown error";
}

const char *foyer_reason_name(foyer_reason r) {
    static const char *const names[] = {"unspecified", "not_found", "full", "started", "wrong_password",
                                        "quota", "rate_limited", "no_capacity", "draining", "denied"};
    return (int)r >= 0 && r <= FOYER_REASON_DENIED ? names[r] : "unknown";
}

int foyer_open(foyer_client *c, const char *host, const char *port, const foyer_options *opt) {
    struct addrinfo hints, *res = NULL, *ai;
    struct timespec now;
    int err;
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->timeout_ms = opt && opt->timeout_ms > 0 ? opt->timeout_ms : FOYER_DEFAULT_TIMEOUT_MS;
    c->attempts = opt && opt->attempts > 0 ? opt->attempts : FOYER_DEFAULT_ATTEMPTS;
    c->framing = opt ? opt->framing : FOYER_COMPACT;
    clock_gettime(CLOCK_MONOTONIC, &now);
    c->seq = (uint16_t)(now.tv_nsec ^ (long)getpid() * 7919);
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) return FOYER_EINVAL;
    err = FOYER_EINVAL;
    for (ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) { err = FOYER_ESYS; continue; }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) { err = FOYER_ESYS; close(fd); continue; }
        getnameinfo(ai->ai_addr, ai->ai_addrlen, c->address, sizeof c->address, NULL, 0, NI_NUMERICHOST);
        c->fd = fd;
        err = FOYER_OK;
        break;
    }
    freeaddrinfo(res);
    return err;
}

void foyer_close(foyer_client *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

static int64_t foyer__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* foyer__answers reports whether m answers request t (for room). */
static int foyer__answers(foyer_type t, uint32_t room, const foyer_message *m) {
    switch (t) {
    case FOYER_LIST_ROOMS: return m->type == FOYER_ROOM_LIST;
    case FOYER_CREATE_ROOM: return m->type == FOYER_ROOM_CREATED || m->type == FOYER_JOIN_FAILED;
    default: return m->type == FOYER_JOIN_FAILED || (m->type == FOYER_JOIN_SUCCESS && m->room == room);
    }
}

/* foyer__do sends request t until its reply arrives in c->buf (decoded
 * into m) or the attempts run out. */
static int foyer__do(foyer_client *c, foyer_type t, uint32_t room, foyer_message *m) {
    uint8_t pkt[17 + 4 + 4];
    size_t n;
    int attempt, refused = 0;
    if (c->fd < 0) { errno = EBADF; return FOYER_ESYS; }
    c->seq++;
    n = foyer_encode_request(pkt, sizeof pkt, c->framing, t, c->seq, 0, room);
    for (attempt = 0; attempt < c->attempts; attempt++) {
        int64_t deadline;
        if (attempt > 0 && refused) {
            struct timespec pause = {0, 250000000L};
            if (c->timeout_ms < 250) pause.tv_nsec = c->timeout_ms * 1000000L;
            nanosleep(&pause, NULL);
        }
        refused = 0;
        if (send(c->fd, pkt, n, 0) < 0) {
            if (errno == ECONNREFUSED) { refused = 1; continue; }
            return FOYER_ESYS;
        }
        deadline = foyer__now_ms() + c->timeout_ms;
        for (;;) {
            struct pollfd pfd;
            int64_t left = deadline - foyer__now_ms();
            ssize_t got;
            int ready;
            if (left <= 0) break;
            pfd.fd = c->fd;
            pfd.events = POLLIN;
            pfd.revents = 0;
            ready = poll(&pfd, 1, (int)left);
            if (ready < 0 && errno == EINTR) continue;
            if (ready < 0) return FOYER_ESYS;
            if (ready == 0) break;
            got = recv(c->fd, c->buf, sizeof c->buf, 0);
            if (got < 0) {
                if (errno == ECONNREFUSED) { refused = 1; break; }
                if (errno == EINTR || errno == EAGAIN) continue;
                return FOYER_ESYS;
            }
            if (foyer_decode(c->buf, (size_t)got, m, NULL, 0, c->scratch) == 0 && m->seq == c->seq &&
                foyer__answers(t, room, m)) {
                c->answered = 1;
                return FOYER_OK;
            }
        }
    }
    return refused ? FOYER_EUNREACHABLE : FOYER_ETIMEOUT;
}

static int foyer__matches(const foyer_filter *f, const foyer_room *r) {
    return !f || ((!f->has_state || r->state == f->state) && (int)r->max_players - (int)r->players >= f->free_seats);
}

int foyer_list(foyer_client *c, const foyer_filter *f, foyer_room *rooms, size_t cap, size_t *count) {
    foyer_message m;
    size_t i;
    int err;
    *count = 0;
    if (f && (f->mode || f->map || f->name_prefix || f->tag_count)) return FOYER_ENOTSUP;
    if ((err = foyer__do(c, FOYER_LIST_ROOMS, 0, &m)) != FOYER_OK) return err;
    for (i = 0; i < m.room_count; i++) {
        foyer_room r;
        foyer__room(m.payload + 2 + 11 * i, &r);
        if (!foyer__matches(f, &r)) continue;
        if (*count < cap) rooms[*count] = r;
        (*count)++;
    }
    return FOYER_OK;
}

static int foyer__seat(foyer_client *c, foyer_type t, uint32_t room, foyer_seat *seat) {
    foyer_message m;
    int err = foyer__do(c, t, room, &m);
    memset(seat, 0, sizeof *seat);
    if (err != FOYER_OK) return err;
    if (m.type == FOYER_JOIN_FAILED) {
        c->reason = FOYER_REASON_UNSPECIFIED;
        return FOYER_EREFUSED;
    }
    seat->room = m.room;
    seat->port = m.port;
    memcpy(seat->address, c->address, sizeof seat->address);
    return FOYER_OK;
}

int foyer_create(foyer_client *c, const foyer_create_options *opt, foyer_seat *seat) {
    if (opt && (opt->name || opt->mode || opt->map || opt->password || opt->tag_count || opt->private_room))
        return FOYER_ENOTSUP;
    if (!c->answered) { /* a lobby starts few rooms for senders it never answered */
        size_t count;
        int err = foyer_list(c, NULL, NULL, 0, &count);
        if (err != FOYER_OK) return err;
    }
    return foyer__seat(c, FOYER_CREATE_ROOM, 0, seat);
}

int foyer_join(foyer_client *c, uint32_t room, foyer_seat *seat) {
    return foyer__seat(c, FOYER_JOIN_ROOM, room, seat);
}

int foyer_join_code(foyer_client *c, const char *code, const char *password, foyer_seat *seat) {
    (void)c; (void)code; (void)password;
    memset(seat, 0, sizeof *seat);
    return FOYER_ENOTSUP;
}

int foyer_quick_join(foyer_client *c, const foyer_filter *f, foyer_seat *seat) {
    (void)c; (void)f;
    memset(seat, 0, sizeof *seat);
    return FOYER_ENOTSUP;
}

#endif /* FOYER_IMPLEMENTED */
#endif /* FOYER_IMPLEMENTATION */
