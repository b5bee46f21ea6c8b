/* foyer.h: a client of Foyer game lobbies in one C99 header.
 *
 * List a lobby's rooms, create one or join one, and get a seat: where the
 * room's game server listens. Every request is one UDP datagram answered
 * by one; it is sent up to `attempts` times, `timeout_ms` apart, with the
 * same sequence id, so a lobby that already acted on it answers from its
 * retry cache instead of acting twice. Replies are matched by sequence id;
 * anything else reaching the socket (strays, bad CRCs) is dropped.
 *
 * Foyer's extension (names, filters, codes, passwords, quick join, seat
 * tokens) is spoken to a lobby that answers it, as the Go client does: the
 * first extension request also lists the seed way, and a lobby that answers
 * only that, or nothing within a second, is a seed lobby for the client's
 * life; verbs then fall back to the seed messages where they can and return
 * FOYER_ENOTSUP where they cannot. The client echoes the retry token the
 * lobby hands out (EXT_RETRY) and pads its requests until it has one.
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
#define FOYER_EXT_MAX_PAYLOAD (1200 - 8 - 4) /* the extension's longest payload */
#define FOYER_PAD_TO 64 /* a request without a retry token is padded to this length */
#define FOYER_CODE_ALPHABET "ABCDEFGHJKMNPQRSTUVWXYZ" /* the letters of join codes */

typedef enum { FOYER_COMPACT = 0, FOYER_LEGACY = 1 } foyer_framing;

typedef enum {
    FOYER_LIST_ROOMS = 0x40, FOYER_ROOM_LIST = 0x41, FOYER_CREATE_ROOM = 0x42,
    FOYER_ROOM_CREATED = 0x43, FOYER_JOIN_ROOM = 0x44, FOYER_JOIN_SUCCESS = 0x45,
    FOYER_JOIN_FAILED = 0x46,
    FOYER_EXT_LIST = 0x80, FOYER_EXT_ROOMS = 0x81, FOYER_EXT_CREATE = 0x82, FOYER_EXT_SEAT = 0x83,
    FOYER_EXT_JOIN = 0x84, FOYER_EXT_REFUSED = 0x85, FOYER_EXT_QUICK = 0x86, FOYER_EXT_RETRY = 0x87,
    FOYER_EXT_PRESENT = 0x88, FOYER_EXT_ADMITTED = 0x89
} foyer_type;

typedef enum { FOYER_WAITING = 0, FOYER_COUNTDOWN = 1, FOYER_PLAYING = 2, FOYER_FINISHED = 3 } foyer_state;

/* What the requests return: FOYER_OK or one of these. */
typedef enum {
    FOYER_OK = 0,
    FOYER_ETIMEOUT = -1,     /* no attempt got its reply in time */
    FOYER_EREFUSED = -2,     /* the lobby said no (JOIN_FAILED, EXT_REFUSED): foyer_client.reason says why */
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
    FOYER_MALFORMED_ROOM_COUNT, FOYER_MALFORMED_ROOM_STATE, FOYER_MALFORMED_EXT_VERSION,
    FOYER_MALFORMED_EXT_SHORT, FOYER_MALFORMED_EXT_FIELD, FOYER_MALFORMED_EXT_TRAILING
} foyer_malformed;

typedef struct {
    char key[17], value[33];
} foyer_tag;

typedef struct {
    uint32_t id;
    uint16_t players, max_players, port;
    foyer_state state;
    /* The extension's; empty from a seed lobby. */
    int has_password;
    char code[7], name[33], mode[17], map[33];
    foyer_tag tags[4];
    size_t tag_count;
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
    char code[7]; /* the room's join code */
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

/* What a new room is to be; a seed lobby takes none of it (and refuses
 * private_room and password: FOYER_ENOTSUP). */
typedef struct {
    const char *name, *mode, *map, *password;
    const char *const *tags; /* "key=value" */
    size_t tag_count;
    int private_room;
} foyer_create_options;

/* One decoded datagram. payload points into the datagram, or into the
 * scratch buffer when it was compressed. Of the extension, decode reads
 * the lobby's replies only. */
typedef struct {
    foyer_framing framing;
    foyer_type type;
    uint16_t seq;
    uint32_t tick;
    int compressed;
    uint32_t room; /* a seed reply's, EXT_SEAT's, EXT_ADMITTED's */
    uint16_t port;
    size_t room_count;
    const uint8_t *payload;
    size_t payload_len;
    uint8_t token[64]; /* EXT_RETRY: the token to echo */
    size_t token_len;
    char code[7], address[46]; /* EXT_SEAT: the room's code, where it runs ("": the lobby's address) */
    uint8_t seat_token[64];
    size_t seat_token_len;
    uint32_t next;       /* EXT_ROOMS: the cursor of the next page, 0 after the last */
    foyer_reason reason; /* EXT_REFUSED */
} foyer_message;

/* An extension request, as foyer_encode_ext writes it. */
typedef struct {
    foyer_framing framing;
    foyer_type type; /* FOYER_EXT_LIST, _CREATE, _JOIN, _QUICK, or _PRESENT (to a room) */
    uint16_t seq;
    uint32_t tick;
    const uint8_t *token; /* the lobby's retry token, echoed */
    size_t token_len;
    size_t pad;           /* zero bytes the request ends with */
    uint8_t client[8];    /* the client's own id, which its seat token binds */
    const foyer_filter *filter;         /* EXT_LIST, EXT_QUICK (NULL: none) */
    uint32_t cursor;                    /* EXT_LIST */
    uint8_t limit;                      /* EXT_LIST */
    const foyer_create_options *create; /* EXT_CREATE (NULL: none) */
    const char *password, *code;        /* EXT_JOIN: a code, or room */
    uint32_t room;
    const uint8_t *seat_token;          /* EXT_PRESENT: the seat's token */
    size_t seat_token_len;
} foyer_ext_request;

typedef struct {
    int fd;
    int timeout_ms, attempts;
    foyer_framing framing;
    uint16_t seq;
    int answered;        /* the lobby answered once: it has seen this client receive */
    foyer_reason reason; /* why the last request was refused */
    char address[46];    /* the lobby's IP: where its rooms are */
    int ext;             /* the lobby speaks the extension: 1; does not: -1; not known yet: 0 */
    uint8_t token[64];   /* its retry token */
    size_t token_len;
    uint8_t id[8];       /* this client's id, which its seat tokens bind */
    uint8_t pkt[1200];
    uint8_t buf[FOYER_MAX_DATAGRAM];
    uint8_t scratch[FOYER_MAX_PAYLOAD];
} foyer_client;

/* Resolves host and port and opens a socket to the lobby there; opt may be NULL. */
int foyer_open(foyer_client *c, const char *host, const char *port, const foyer_options *opt);
void foyer_close(foyer_client *c);
/* The rooms f matches (f may be NULL), page after page, at most cap of
 * them into rooms; *count is how many matched, which may exceed cap. */
int foyer_list(foyer_client *c, const foyer_filter *f, foyer_room *rooms, size_t cap, size_t *count);
/* One page of the rooms f matches after cursor (0: from the first), at
 * most limit (0: as many as fit a datagram) and cap of them into rooms;
 * *next is the next page's cursor, 0 after the last. Needs the extension. */
int foyer_page(foyer_client *c, const foyer_filter *f, uint32_t cursor, uint8_t limit, foyer_room *rooms,
               size_t cap, size_t *count, uint32_t *next);
/* Starts a room and holds a seat in it; opt may be NULL. */
int foyer_create(foyer_client *c, const foyer_create_options *opt, foyer_seat *seat);
int foyer_join(foyer_client *c, uint32_t room, foyer_seat *seat);
/* Holds a seat in the room of a join code (any case), with its password
 * (NULL: none); needs the extension. */
int foyer_join_code(foyer_client *c, const char *code, const char *password, foyer_seat *seat);
/* Holds a seat in the fullest joinable room f matches, or in a new one. A
 * seed lobby's fallback tries the fullest room it lists, then creates. */
int foyer_quick_join(foyer_client *c, const foyer_filter *f, foyer_seat *seat);
/* Shows seat's token to its room from fd, a UDP socket, until the room
 * answers EXT_ADMITTED, attempts times at most (0: FOYER_DEFAULT_ATTEMPTS),
 * each waiting timeout_ms (0: FOYER_DEFAULT_TIMEOUT_MS): the room's door
 * then admits the socket's address into the seat, wherever it is (a new
 * socket takes the seat back after a drop). fd is connected or not:
 * - connected to seat->address, seat->port: the token goes to its peer,
 *   and the kernel drops what comes from elsewhere;
 * - unconnected (the game's one socket for every peer): the token is sent
 *   to seat->address, seat->port (an IPv4 address as ::ffff:a.b.c.d from
 *   an IPv6 socket), fd is left unconnected, and only a datagram from that
 *   address and port counts.
 * It reads fd meanwhile and drops what else comes; call it before reading
 * fd for the game. FOYER_ETIMEOUT when no EXT_ADMITTED comes (a door drops
 * a token it does not take unanswered), FOYER_EINVAL for a seat without a
 * token (a seed lobby's) or an address that fd's family cannot reach. */
int foyer_present(int fd, const foyer_seat *seat, int timeout_ms, int attempts);
const char *foyer_strerror(int err);
const char *foyer_reason_name(foyer_reason r);

/* The codec. */
uint32_t foyer_crc32(const uint8_t *b, size_t n);
/* Writes a LIST_ROOMS, CREATE_ROOM or JOIN_ROOM (room) request into out;
 * returns its length, or 0 if cap is too small or t is no request. */
size_t foyer_encode_request(uint8_t *out, size_t cap, foyer_framing f, foyer_type t,
                            uint16_t seq, uint32_t tick, uint32_t room);
/* Writes an extension request into out; returns its length, or 0 if cap
 * is too small or a field is out of its range. */
size_t foyer_encode_ext(uint8_t *out, size_t cap, const foyer_ext_request *r);
/* Checks one datagram and fills m, and at most cap rooms of a ROOM_LIST or EXT_ROOMS;
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
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

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

/* foyer__frame writes the header of an n-byte payload at out + its length,
 * and the CRC after it; returns the datagram's length. */
static size_t foyer__frame(uint8_t *out, foyer_framing f, int t, uint16_t seq, uint32_t tick, size_t n) {
    size_t hl = f == FOYER_LEGACY ? 17 : 8;
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
    foyer__put32(out + hl + n, foyer_crc32(out, hl + n));
    return hl + n + 4;
}

size_t foyer_encode_request(uint8_t *out, size_t cap, foyer_framing f, foyer_type t,
                            uint16_t seq, uint32_t tick, uint32_t room) {
    size_t hl = f == FOYER_LEGACY ? 17 : 8, n = t == FOYER_JOIN_ROOM ? 4 : 0;
    if (t != FOYER_LIST_ROOMS && t != FOYER_CREATE_ROOM && t != FOYER_JOIN_ROOM) return 0;
    if (cap < hl + n + 4) return 0;
    if (n) foyer__put32(out + hl, room);
    return foyer__frame(out, f, t, seq, tick, n);
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

static int foyer__request(int t) {
    return t == FOYER_LIST_ROOMS || t == FOYER_CREATE_ROOM || t == FOYER_JOIN_ROOM || (t >= 0x80 && t % 2 == 0);
}

static int foyer__holds(int t, size_t n) {
    if (t >= 0x80) return n <= FOYER_EXT_MAX_PAYLOAD;
    switch (t) {
    case FOYER_JOIN_ROOM: return n == 4;
    case FOYER_ROOM_CREATED: case FOYER_JOIN_SUCCESS: return n == 6;
    case FOYER_ROOM_LIST: return n >= 2 && (n - 2) % 11 == 0;
    default: return n == 0;
    }
}

static void foyer__room(const uint8_t *e, foyer_room *r) {
    memset(r, 0, sizeof *r);
    r->id = foyer__u32(e);
    r->players = foyer__u16(e + 4);
    r->max_players = foyer__u16(e + 6);
    r->port = foyer__u16(e + 8);
    r->state = (foyer_state)e[10];
}

/* --- the extension ---------------------------------------------------------- */

/* foyer__text_ok reports whether b[0..n) is UTF-8 without control characters. */
static int foyer__text_ok(const uint8_t *b, size_t n) {
    size_t i = 0, k, len;
    while (i < n) {
        uint32_t c = b[i];
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F) return 0;
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) { len = 2; c &= 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; c &= 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; c &= 0x07; }
        else return 0;
        if (n - i < len) return 0;
        for (k = 1; k < len; k++) {
            if ((b[i + k] & 0xC0) != 0x80) return 0;
            c = c << 6 | (b[i + k] & 0x3F);
        }
        if ((len == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
            c < 0xA0)
            return 0;
        i += len;
    }
    return 1;
}

static int foyer__key_ok(const char *k, size_t n) {
    size_t i;
    if (n == 0 || n > 16) return 0;
    for (i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_' || k[i] == '-' || k[i] == '.'))
            return 0;
    return 1;
}

static int foyer__code_ok(const uint8_t *s) {
    int i;
    for (i = 0; i < 6; i++)
        if (!s[i] || !strchr(FOYER_CODE_ALPHABET, s[i])) return 0;
    return 1;
}

/* foyer__w writes a payload; bad sticks once a field is out of range or
 * out of room. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
    int bad;
} foyer__w;

static void foyer__wbytes(foyer__w *w, const void *b, size_t n) {
    if (w->bad || n > w->cap - w->n) { w->bad = 1; return; }
    if (n) memcpy(w->p + w->n, b, n);
    w->n += n;
}
static void foyer__w8(foyer__w *w, unsigned v) { uint8_t b = (uint8_t)v; foyer__wbytes(w, &b, 1); }
static void foyer__w32(foyer__w *w, uint32_t v) { uint8_t b[4]; foyer__put32(b, v); foyer__wbytes(w, b, 4); }
static void foyer__wcheck(foyer__w *w, int ok) { if (!ok) w->bad = 1; }

static void foyer__wtext(foyer__w *w, const char *s, size_t n, size_t max) {
    foyer__wcheck(w, n <= max && foyer__text_ok((const uint8_t *)s, n));
    foyer__w8(w, (unsigned)n);
    foyer__wbytes(w, s, n);
}
static void foyer__wstr(foyer__w *w, const char *s, size_t max) { foyer__wtext(w, s ? s : "", s ? strlen(s) : 0, max); }

/* foyer__wtags writes "key=value" tags: at most 4, keys valid and distinct. */
static void foyer__wtags(foyer__w *w, const char *const *tags, size_t n) {
    size_t i, j;
    foyer__wcheck(w, n <= 4);
    foyer__w8(w, (unsigned)n);
    for (i = 0; i < n && !w->bad; i++) {
        const char *eq = strchr(tags[i], '=');
        size_t kn = eq ? (size_t)(eq - tags[i]) : 0;
        foyer__wcheck(w, eq && foyer__key_ok(tags[i], kn));
        for (j = 0; j < i && !w->bad; j++) foyer__wcheck(w, strncmp(tags[j], tags[i], kn + 1) != 0);
        if (w->bad) return;
        foyer__wtext(w, tags[i], kn, 16);
        foyer__wstr(w, eq + 1, 32);
    }
}

static void foyer__wfilter(foyer__w *w, const foyer_filter *f) {
    static const foyer_filter none;
    if (!f) f = &none;
    foyer__wcheck(w, (!f->has_state || (unsigned)f->state <= FOYER_FINISHED) && f->free_seats >= 0 && f->free_seats <= 255);
    foyer__w8(w, f->has_state ? 1u << f->state : 0);
    foyer__w8(w, (unsigned)f->free_seats);
    foyer__wstr(w, f->mode, 16);
    foyer__wstr(w, f->map, 32);
    foyer__wstr(w, f->name_prefix, 32);
    foyer__wtags(w, f->tags, f->tag_count);
}

size_t foyer_encode_ext(uint8_t *out, size_t cap, const foyer_ext_request *r) {
    static const foyer_create_options plain;
    const foyer_create_options *o = r->create ? r->create : &plain;
    size_t hl = r->framing == FOYER_LEGACY ? 17 : 8, pad;
    foyer__w w;
    if (cap < hl + 4) return 0;
    w.p = out + hl;
    w.n = 0;
    w.cap = cap - hl - 4;
    w.bad = r->token_len > 64;
    foyer__w8(&w, 1);
    if (r->type == FOYER_EXT_PRESENT) { /* to a room: its seat token, never padded */
        foyer__wcheck(&w, r->seat_token_len > 0 && r->seat_token_len <= 64);
        foyer__w8(&w, (unsigned)r->seat_token_len);
        foyer__wbytes(&w, r->seat_token, r->seat_token_len);
        return w.bad ? 0 : foyer__frame(out, r->framing, r->type, r->seq, r->tick, w.n);
    }
    foyer__w8(&w, (unsigned)r->token_len);
    foyer__wbytes(&w, r->token, r->token_len);
    switch (r->type) {
    case FOYER_EXT_LIST:
        foyer__w32(&w, r->cursor);
        foyer__w8(&w, r->limit);
        foyer__wfilter(&w, r->filter);
        break;
    case FOYER_EXT_CREATE:
        foyer__wbytes(&w, r->client, 8);
        foyer__w8(&w, o->private_room ? 1 : 0);
        foyer__wstr(&w, o->name, 32);
        foyer__wstr(&w, o->mode, 16);
        foyer__wstr(&w, o->map, 32);
        foyer__wtags(&w, o->tags, o->tag_count);
        foyer__wstr(&w, o->password, 64);
        break;
    case FOYER_EXT_JOIN: {
        int by_code = r->code && r->code[0];
        foyer__wcheck(&w, (r->room == 0) == by_code && (!by_code || (strlen(r->code) == 6 && foyer__code_ok((const uint8_t *)r->code))));
        foyer__wbytes(&w, r->client, 8);
        foyer__w32(&w, r->room);
        foyer__w8(&w, by_code ? 6 : 0);
        if (by_code && !w.bad) foyer__wbytes(&w, r->code, 6);
        foyer__wstr(&w, r->password, 64);
        break;
    }
    case FOYER_EXT_QUICK:
        foyer__wbytes(&w, r->client, 8);
        foyer__wfilter(&w, r->filter);
        break;
    default:
        return 0;
    }
    for (pad = 0; pad < r->pad && !w.bad; pad++) foyer__w8(&w, 0);
    if (w.bad || w.n > FOYER_EXT_MAX_PAYLOAD) return 0;
    return foyer__frame(out, r->framing, r->type, r->seq, r->tick, w.n);
}

/* foyer__r reads a payload front to back; the first fault sticks in err. */
typedef struct {
    const uint8_t *p;
    size_t i, n;
    int err;
} foyer__r;

static const uint8_t *foyer__take(foyer__r *r, size_t k) {
    if (r->err) return NULL;
    if (k > r->n - r->i) { r->err = FOYER_MALFORMED_EXT_SHORT; return NULL; }
    r->i += k;
    return r->p + r->i - k;
}
static unsigned foyer__r8(foyer__r *r) { const uint8_t *b = foyer__take(r, 1); return b ? b[0] : 0; }
static uint16_t foyer__r16(foyer__r *r) { const uint8_t *b = foyer__take(r, 2); return b ? foyer__u16(b) : 0; }
static uint32_t foyer__r32(foyer__r *r) { const uint8_t *b = foyer__take(r, 4); return b ? foyer__u32(b) : 0; }
static void foyer__rcheck(foyer__r *r, int ok) { if (!r->err && !ok) r->err = FOYER_MALFORMED_EXT_FIELD; }

/* foyer__rtext reads a text of at most max bytes into out (max + 1 bytes). */
static void foyer__rtext(foyer__r *r, size_t max, char *out) {
    size_t n = foyer__r8(r);
    const uint8_t *b = foyer__take(r, n);
    if (!b) return;
    foyer__rcheck(r, n <= max && foyer__text_ok(b, n));
    if (r->err) return;
    memcpy(out, b, n);
    out[n] = 0;
}

static void foyer__rcode(foyer__r *r, char out[7]) {
    const uint8_t *b = foyer__take(r, 6);
    if (!b) return;
    foyer__rcheck(r, foyer__code_ok(b));
    if (r->err) return;
    memcpy(out, b, 6);
    out[6] = 0;
}

/* foyer__rblob reads at most 64 bytes into out; returns how many. */
static size_t foyer__rblob(foyer__r *r, uint8_t out[64]) {
    size_t n = foyer__r8(r);
    const uint8_t *b;
    foyer__rcheck(r, n <= 64);
    b = foyer__take(r, n);
    if (!b) return 0;
    memcpy(out, b, n);
    return n;
}

static void foyer__rtags(foyer__r *r, foyer_room *e) {
    size_t n = foyer__r8(r), i, j;
    foyer__rcheck(r, n <= 4);
    for (i = 0; i < n && !r->err; i++) {
        foyer__rtext(r, 16, e->tags[i].key);
        foyer__rtext(r, 32, e->tags[i].value);
        if (r->err) return;
        foyer__rcheck(r, foyer__key_ok(e->tags[i].key, strlen(e->tags[i].key)));
        for (j = 0; j < i; j++) foyer__rcheck(r, strcmp(e->tags[j].key, e->tags[i].key) != 0);
    }
    e->tag_count = n;
}

static int foyer__ext(const uint8_t *p, size_t n, foyer_message *m, foyer_room *rooms, size_t cap) {
    foyer__r r;
    size_t i, count, k;
    r.p = p;
    r.i = 0;
    r.n = n;
    r.err = 0;
    if (foyer__r8(&r) != 1 && !r.err) return FOYER_MALFORMED_EXT_VERSION;
    switch (m->type) {
    case FOYER_EXT_ROOMS:
        m->next = foyer__r32(&r);
        count = foyer__r8(&r);
        for (i = 0; i < count && !r.err; i++) {
            foyer_room e;
            unsigned flags;
            if (r.n - r.i < 22) { r.err = FOYER_MALFORMED_EXT_SHORT; break; } /* count is backed before it is read */
            memset(&e, 0, sizeof e);
            e.id = foyer__r32(&r);
            e.players = foyer__r16(&r);
            e.max_players = foyer__r16(&r);
            e.port = foyer__r16(&r);
            e.state = (foyer_state)foyer__r8(&r);
            flags = foyer__r8(&r);
            foyer__rcheck(&r, e.state <= FOYER_FINISHED && (flags & ~1u) == 0);
            e.has_password = (int)(flags & 1);
            foyer__rcode(&r, e.code);
            foyer__rtext(&r, 32, e.name);
            foyer__rtext(&r, 16, e.mode);
            foyer__rtext(&r, 32, e.map);
            foyer__rtags(&r, &e);
            if (!r.err && i < cap) rooms[i] = e;
        }
        m->room_count = count;
        break;
    case FOYER_EXT_SEAT: {
        const uint8_t *a;
        static const uint8_t v4in6[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
        m->room = foyer__r32(&r);
        m->port = foyer__r16(&r);
        foyer__rcode(&r, m->code);
        k = foyer__r8(&r);
        a = foyer__take(&r, k);
        foyer__rcheck(&r, k == 0 || k == 4 || (k == 16 && a && memcmp(a, v4in6, 12) != 0));
        if (!r.err && k) inet_ntop(k == 4 ? AF_INET : AF_INET6, a, m->address, sizeof m->address);
        m->seat_token_len = foyer__rblob(&r, m->seat_token);
        break;
    }
    case FOYER_EXT_REFUSED:
        k = foyer__r8(&r);
        m->reason = k <= FOYER_REASON_DENIED ? (foyer_reason)k : FOYER_REASON_UNSPECIFIED;
        break;
    case FOYER_EXT_ADMITTED:
        m->room = foyer__r32(&r);
        break;
    default: /* EXT_RETRY */
        m->token_len = foyer__rblob(&r, m->token);
        foyer__rcheck(&r, m->token_len > 0);
    }
    if (r.err) return r.err;
    return r.i == r.n ? 0 : FOYER_MALFORMED_EXT_TRAILING;
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
    if ((t < 0x40 || t > 0x46) && t != 0x81 && t != 0x83 && t != 0x85 && t != 0x87 && t != 0x89)
        return FOYER_MALFORMED_UNKNOWN_TYPE;
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
    if (t >= 0x80) return foyer__ext(p, n, m, rooms, cap);
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
                                        "payload_size", "room_count", "room_state", "ext_version",
                                        "ext_short", "ext_field", "ext_trailing"};
    return why >= 0 && why <= FOYER_MALFORMED_EXT_TRAILING ? names[why] : "unknown";
}

const char *foyer_strerror(int err) {
    switch (err) {
    case FOYER_OK: return "ok";
    case FOYER_ETIMEOUT: return "timeout: no reply after every attempt";
    case FOYER_EREFUSED: return "the lobby refused (see foyer_client.reason)";
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
    {
        int r = open("/dev/urandom", O_RDONLY), i;
        if (r < 0 || read(r, c->id, sizeof c->id) != (ssize_t)sizeof c->id)
            for (i = 0; i < 8; i++) c->id[i] = (uint8_t)((now.tv_nsec >> (3 * i)) ^ (long)getpid() >> i);
        if (r >= 0) close(r);
    }
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

/* foyer__wait waits until fd has a datagram to read or deadline (in
 * foyer__now_ms time) passes: 1 when it has, 0 when the time is up, -1 on
 * an error (errno says which). */
static int foyer__wait(int fd, int64_t deadline) {
    for (;;) {
        struct pollfd pfd;
        int64_t left = deadline - foyer__now_ms();
        int ready;
        if (left <= 0) return 0;
        pfd.fd = fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        ready = poll(&pfd, 1, (int)left);
        if (ready < 0 && errno == EINTR) continue;
        return ready < 0 ? -1 : ready > 0;
    }
}

/* foyer__answers reports whether m answers request t (for room). */
static int foyer__answers(int t, uint32_t room, const foyer_message *m) {
    switch (t) {
    case FOYER_LIST_ROOMS: return m->type == FOYER_ROOM_LIST;
    case FOYER_CREATE_ROOM: return m->type == FOYER_ROOM_CREATED || m->type == FOYER_JOIN_FAILED;
    case FOYER_JOIN_ROOM: return m->type == FOYER_JOIN_FAILED || (m->type == FOYER_JOIN_SUCCESS && m->room == room);
    case FOYER_EXT_LIST: return m->type == FOYER_EXT_ROOMS || m->type == FOYER_EXT_RETRY || m->type == FOYER_EXT_REFUSED;
    default: return m->type == FOYER_EXT_SEAT || m->type == FOYER_EXT_RETRY || m->type == FOYER_EXT_REFUSED;
    }
}

/* foyer__exchange sends pkt (request t, sequence id seq) until its reply
 * arrives in c->buf (decoded into m, rooms) or the attempts run out. With
 * seed >= 0 it first sends a seed LIST of that sequence id, whose answer
 * leaves the reply 200 ms more: the extension's probe. */
static int foyer__exchange(foyer_client *c, const uint8_t *pkt, size_t n, uint16_t seq, int t, uint32_t room,
                           int timeout_ms, int attempts, int seed, foyer_message *m, foyer_room *rooms, size_t cap) {
    int attempt, refused = 0;
    if (c->fd < 0) { errno = EBADF; return FOYER_ESYS; }
    if (seed >= 0) {
        uint8_t list[17 + 4];
        size_t ln = foyer_encode_request(list, sizeof list, c->framing, FOYER_LIST_ROOMS, (uint16_t)seed, 0, 0);
        if (send(c->fd, list, ln, 0) < 0 && errno != ECONNREFUSED) return FOYER_ESYS;
    }
    for (attempt = 0; attempt < attempts; attempt++) {
        int64_t deadline;
        if (attempt > 0 && refused) {
            struct timespec pause = {0, 250000000L};
            if (timeout_ms < 250) pause.tv_nsec = timeout_ms * 1000000L;
            nanosleep(&pause, NULL);
        }
        refused = 0;
        if (send(c->fd, pkt, n, 0) < 0) {
            if (errno == ECONNREFUSED) { refused = 1; continue; }
            return FOYER_ESYS;
        }
        deadline = foyer__now_ms() + timeout_ms;
        for (;;) {
            ssize_t got;
            int ready = foyer__wait(c->fd, deadline);
            if (ready < 0) return FOYER_ESYS;
            if (ready == 0) break;
            got = recv(c->fd, c->buf, sizeof c->buf, 0);
            if (got < 0) {
                if (errno == ECONNREFUSED) { refused = 1; break; }
                if (errno == EINTR || errno == EAGAIN) continue;
                return FOYER_ESYS;
            }
            if (foyer_decode(c->buf, (size_t)got, m, rooms, cap, c->scratch) != 0) continue;
            if (m->seq == seq && foyer__answers(t, room, m)) return FOYER_OK;
            if (seed >= 0 && m->seq == (uint16_t)seed && m->type == FOYER_ROOM_LIST) {
                if (deadline > foyer__now_ms() + 200) deadline = foyer__now_ms() + 200;
                seed = -1;
            }
        }
    }
    return refused ? FOYER_EUNREACHABLE : FOYER_ETIMEOUT;
}

/* foyer__v4mapped is the prefix of an IPv4 address in IPv6: ::ffff:a.b.c.d. */
static const uint8_t foyer__v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

/* foyer__ip16 reads a's IP into ip, an IPv4 one as ::ffff:a.b.c.d, and its
 * port into *port: 0, or -1 for a family other than IPv4 and IPv6. */
static int foyer__ip16(const struct sockaddr *a, uint8_t ip[16], uint16_t *port) {
    if (a->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)(const void *)a;
        memcpy(ip, foyer__v4mapped, 12);
        memcpy(ip + 12, &v4->sin_addr, 4);
        *port = ntohs(v4->sin_port);
        return 0;
    }
    if (a->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)(const void *)a;
        memcpy(ip, v6->sin6_addr.s6_addr, 16);
        *port = ntohs(v6->sin6_port);
        return 0;
    }
    return -1;
}

/* foyer__seat_to writes seat's address and port into *to in the family of
 * fd's socket (an IPv4 address as ::ffff:a.b.c.d to an IPv6 socket):
 * FOYER_OK, FOYER_EINVAL for an address that family cannot reach, or
 * FOYER_ESYS. */
static int foyer__seat_to(int fd, const foyer_seat *seat, struct sockaddr_storage *to, socklen_t *tolen) {
    struct sockaddr_storage own;
    socklen_t ownlen = sizeof own;
    struct addrinfo hints, *res;
    uint8_t ip[16];
    char port[8];
    int err = FOYER_EINVAL;
    if (getsockname(fd, (struct sockaddr *)&own, &ownlen) != 0) return FOYER_ESYS;
    memset(to, 0, sizeof *to);
    memcpy(ip, foyer__v4mapped, 12);
    if (inet_pton(AF_INET, seat->address, ip + 12) == 1 || inet_pton(AF_INET6, seat->address, ip) == 1) {
        if (own.ss_family == AF_INET6) {
            struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)(void *)to;
            v6->sin6_family = AF_INET6;
            memcpy(v6->sin6_addr.s6_addr, ip, 16);
            v6->sin6_port = htons(seat->port);
            *tolen = sizeof *v6;
            return FOYER_OK;
        }
        if (own.ss_family == AF_INET && !memcmp(ip, foyer__v4mapped, 12)) {
            struct sockaddr_in *v4 = (struct sockaddr_in *)(void *)to;
            v4->sin_family = AF_INET;
            memcpy(&v4->sin_addr, ip + 12, 4);
            v4->sin_port = htons(seat->port);
            *tolen = sizeof *v4;
            return FOYER_OK;
        }
        return FOYER_EINVAL;
    }
    /* An IPv6 address with its scope (fe80::1%eth0), as getnameinfo writes
     * a link-local lobby's: getaddrinfo reads the scope. */
    if (own.ss_family != AF_INET6) return FOYER_EINVAL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET6;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICHOST;
    snprintf(port, sizeof port, "%u", (unsigned)seat->port);
    if (getaddrinfo(seat->address, port, &hints, &res) != 0) return FOYER_EINVAL;
    if (res->ai_addrlen <= sizeof *to) {
        memcpy(to, res->ai_addr, res->ai_addrlen);
        *tolen = res->ai_addrlen;
        err = FOYER_OK;
    }
    freeaddrinfo(res);
    return err;
}

int foyer_present(int fd, const foyer_seat *seat, int timeout_ms, int attempts) {
    uint8_t pkt[8 + 2 + 64 + 4], buf[64], scratch[FOYER_EXT_MAX_PAYLOAD], ip[16] = {0}, from_ip[16];
    struct sockaddr_storage to, from;
    socklen_t tolen = sizeof to, fromlen;
    foyer_ext_request r;
    foyer_message m;
    size_t n;
    uint16_t port = 0, from_port = 0;
    int attempt, connected, err;
    memset(&r, 0, sizeof r);
    r.type = FOYER_EXT_PRESENT;
    r.seat_token = seat->token;
    r.seat_token_len = seat->token_len;
    n = foyer_encode_ext(pkt, sizeof pkt, &r);
    if (n == 0) return FOYER_EINVAL; /* no token: a seed lobby's seat */
    if (timeout_ms <= 0) timeout_ms = FOYER_DEFAULT_TIMEOUT_MS;
    if (attempts <= 0) attempts = FOYER_DEFAULT_ATTEMPTS;
    /* A connected socket is sent to and read as it is. An unconnected one
     * is sent to the seat, and what comes from elsewhere is dropped here. */
    connected = getpeername(fd, (struct sockaddr *)&to, &tolen) == 0;
    if (!connected) {
        if (errno != ENOTCONN) return FOYER_ESYS;
        if ((err = foyer__seat_to(fd, seat, &to, &tolen)) != FOYER_OK) return err;
        foyer__ip16((const struct sockaddr *)&to, ip, &port);
    }
    for (attempt = 0; attempt < attempts; attempt++) {
        int64_t deadline = foyer__now_ms() + timeout_ms;
        ssize_t sent = connected ? send(fd, pkt, n, 0) : sendto(fd, pkt, n, 0, (const struct sockaddr *)&to, tolen);
        /* A refusal of an earlier datagram: this one may still reach the room. */
        if (sent < 0 && errno != ECONNREFUSED) return FOYER_ESYS;
        for (;;) {
            ssize_t got;
            int ready = foyer__wait(fd, deadline);
            if (ready < 0) return FOYER_ESYS;
            if (ready == 0) break; /* the attempt's time is up */
            fromlen = sizeof from;
            got = connected ? recv(fd, buf, sizeof buf, 0)
                            : recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fromlen);
            if (got < 0) {
                if (errno == ECONNREFUSED || errno == EINTR || errno == EAGAIN) continue;
                return FOYER_ESYS;
            }
            if (!connected && (foyer__ip16((const struct sockaddr *)&from, from_ip, &from_port) != 0 ||
                               from_port != port || memcmp(from_ip, ip, 16) != 0))
                continue; /* not from the seat's address and port */
            /* Only an EXT_ADMITTED is decoded: its payload fits scratch. A
             * longer datagram is cut to buf and fails its length check. */
            if (got < 8 || (buf[0] == 0xA3 ? buf[6] : buf[1]) != FOYER_EXT_ADMITTED) continue;
            if (foyer_decode(buf, (size_t)got, &m, NULL, 0, scratch) == 0 && m.type == FOYER_EXT_ADMITTED &&
                m.room == seat->room)
                return FOYER_OK;
        }
    }
    return FOYER_ETIMEOUT;
}

/* foyer__do sends seed request t and waits for its reply. */
static int foyer__do(foyer_client *c, foyer_type t, uint32_t room, foyer_message *m) {
    size_t n;
    int err;
    c->seq++;
    n = foyer_encode_request(c->pkt, sizeof c->pkt, c->framing, t, c->seq, 0, room);
    err = foyer__exchange(c, c->pkt, n, c->seq, t, room, c->timeout_ms, c->attempts, -1, m, NULL, 0);
    if (err == FOYER_OK) c->answered = 1;
    return err;
}

/* foyer__send_ext sends extension request r with the client's retry token
 * (padded without one) and waits for its reply. */
static int foyer__send_ext(foyer_client *c, foyer_ext_request *r, int timeout_ms, int attempts, int probe,
                           foyer_message *m, foyer_room *rooms, size_t cap) {
    size_t n;
    int seed = -1;
    r->framing = c->framing;
    r->seq = ++c->seq;
    r->token = c->token;
    r->token_len = c->token_len;
    r->pad = 0;
    memcpy(r->client, c->id, sizeof r->client);
    n = foyer_encode_ext(c->pkt, sizeof c->pkt, r);
    if (n && !c->token_len && n < FOYER_PAD_TO) {
        r->pad = FOYER_PAD_TO - n;
        n = foyer_encode_ext(c->pkt, sizeof c->pkt, r);
    }
    if (!n) return FOYER_EINVAL;
    if (probe) seed = ++c->seq;
    return foyer__exchange(c, c->pkt, n, r->seq, r->type, 0, timeout_ms, attempts, seed, m, rooms, cap);
}

static void foyer__keep_token(foyer_client *c, const foyer_message *m) {
    memcpy(c->token, m->token, m->token_len);
    c->token_len = m->token_len;
}

/* foyer__ask finds out once whether the lobby speaks the extension
 * (FOYER_ENOTSUP if not), then sends r until the lobby answers it other
 * than with a retry token, which it keeps and echoes. */
static int foyer__ask(foyer_client *c, foyer_ext_request *r, foyer_message *m, foyer_room *rooms, size_t cap) {
    int k, err;
    if (c->ext == 0) {
        foyer_ext_request probe;
        memset(&probe, 0, sizeof probe);
        probe.type = FOYER_EXT_LIST;
        probe.limit = 1;
        err = foyer__send_ext(c, &probe, c->timeout_ms < 1000 ? c->timeout_ms : 1000, 1, 1, m, NULL, 0);
        if (err != FOYER_OK && err != FOYER_ETIMEOUT && err != FOYER_EUNREACHABLE) return err;
        c->ext = err == FOYER_OK ? 1 : -1;
        if (err == FOYER_OK && m->type == FOYER_EXT_RETRY) foyer__keep_token(c, m);
    }
    if (c->ext < 0) return FOYER_ENOTSUP;
    for (k = 0; k < 3; k++) {
        if ((err = foyer__send_ext(c, r, c->timeout_ms, c->attempts, 0, m, rooms, cap)) != FOYER_OK) return err;
        if (m->type == FOYER_EXT_RETRY) {
            foyer__keep_token(c, m);
            continue;
        }
        if (m->type == FOYER_EXT_REFUSED) {
            c->reason = m->reason;
            return FOYER_EREFUSED;
        }
        c->answered = 1;
        return FOYER_OK;
    }
    return FOYER_ETIMEOUT;
}

static int foyer__matches(const foyer_filter *f, const foyer_room *r) {
    return !f || ((!f->has_state || r->state == f->state) && (int)r->max_players - (int)r->players >= f->free_seats);
}

static int foyer__seed_filter(const foyer_filter *f) { return !f || (!f->mode && !f->map && !f->name_prefix && !f->tag_count); }

/* foyer__seed_list lists the seed way into m, and what f matches into rooms. */
static int foyer__seed_list(foyer_client *c, const foyer_filter *f, foyer_message *m, foyer_room *rooms, size_t cap,
                            size_t *count) {
    size_t i;
    int err;
    *count = 0;
    if (!foyer__seed_filter(f)) return FOYER_ENOTSUP;
    if ((err = foyer__do(c, FOYER_LIST_ROOMS, 0, m)) != FOYER_OK) return err;
    for (i = 0; i < m->room_count; i++) {
        foyer_room r;
        foyer__room(m->payload + 2 + 11 * i, &r);
        if (!foyer__matches(f, &r)) continue;
        if (*count < cap) rooms[*count] = r;
        (*count)++;
    }
    return FOYER_OK;
}

int foyer_page(foyer_client *c, const foyer_filter *f, uint32_t cursor, uint8_t limit, foyer_room *rooms,
               size_t cap, size_t *count, uint32_t *next) {
    foyer_ext_request r;
    foyer_message m;
    int err;
    memset(&r, 0, sizeof r);
    r.type = FOYER_EXT_LIST;
    r.filter = f;
    r.cursor = cursor;
    r.limit = limit;
    *count = 0;
    *next = 0;
    if ((err = foyer__ask(c, &r, &m, rooms, cap)) != FOYER_OK) return err;
    *count = m.room_count;
    *next = m.next;
    return FOYER_OK;
}

int foyer_list(foyer_client *c, const foyer_filter *f, foyer_room *rooms, size_t cap, size_t *count) {
    uint32_t cursor = 0, next;
    int pages, err;
    *count = 0;
    for (pages = 0; pages < 4096; pages++) {
        size_t at = *count < cap ? *count : cap, got;
        err = foyer_page(c, f, cursor, 0, rooms ? rooms + at : NULL, cap - at, &got, &next);
        if (err == FOYER_ENOTSUP) {
            foyer_message m;
            return foyer__seed_list(c, f, &m, rooms, cap, count);
        }
        if (err != FOYER_OK) return err;
        *count += got;
        if (next == 0 || next <= cursor) break;
        cursor = next;
    }
    return FOYER_OK;
}

/* foyer__seat asks for a seat the seed way. */
static int foyer__seat(foyer_client *c, foyer_type t, uint32_t room, foyer_seat *seat) {
    foyer_message m;
    int err;
    memset(seat, 0, sizeof *seat);
    if (t == FOYER_CREATE_ROOM && !c->answered) { /* a lobby starts few rooms for senders it never answered */
        size_t count;
        if ((err = foyer__seed_list(c, NULL, &m, NULL, 0, &count)) != FOYER_OK) return err;
    }
    if ((err = foyer__do(c, t, room, &m)) != FOYER_OK) return err;
    if (m.type == FOYER_JOIN_FAILED) {
        c->reason = FOYER_REASON_UNSPECIFIED;
        return FOYER_EREFUSED;
    }
    seat->room = m.room;
    seat->port = m.port;
    memcpy(seat->address, c->address, sizeof seat->address);
    return FOYER_OK;
}

/* foyer__ext_seat asks for a seat with r; a seed lobby's way is seed_type
 * (0: none). */
static int foyer__ext_seat(foyer_client *c, foyer_ext_request *r, foyer_type seed_type, foyer_seat *seat) {
    foyer_message m;
    int err = foyer__ask(c, r, &m, NULL, 0);
    if (err == FOYER_ENOTSUP && seed_type) return foyer__seat(c, seed_type, r->room, seat);
    memset(seat, 0, sizeof *seat);
    if (err != FOYER_OK) return err;
    seat->room = m.room;
    seat->port = m.port;
    memcpy(seat->code, m.code, sizeof seat->code);
    memcpy(seat->address, m.address[0] ? m.address : c->address, sizeof seat->address);
    memcpy(seat->token, m.seat_token, m.seat_token_len);
    seat->token_len = m.seat_token_len;
    if (seat->token_len == 41 && seat->token[0] == 1) seat->expires_unix_ms = (int64_t)foyer__u32(seat->token + 21) * 1000;
    return FOYER_OK;
}

int foyer_create(foyer_client *c, const foyer_create_options *opt, foyer_seat *seat) {
    foyer_ext_request r;
    int plain = !opt || (!opt->private_room && !(opt->password && opt->password[0]));
    memset(&r, 0, sizeof r);
    r.type = FOYER_EXT_CREATE;
    r.create = opt;
    return foyer__ext_seat(c, &r, plain ? FOYER_CREATE_ROOM : (foyer_type)0, seat);
}

int foyer_join(foyer_client *c, uint32_t room, foyer_seat *seat) {
    foyer_ext_request r;
    memset(&r, 0, sizeof r);
    r.type = FOYER_EXT_JOIN;
    r.room = room;
    return foyer__ext_seat(c, &r, FOYER_JOIN_ROOM, seat);
}

int foyer_join_code(foyer_client *c, const char *code, const char *password, foyer_seat *seat) {
    foyer_ext_request r;
    char up[7];
    int i;
    memset(seat, 0, sizeof *seat);
    if (!code || strlen(code) != 6) return FOYER_EINVAL;
    for (i = 0; i < 6; i++) up[i] = code[i] >= 'a' && code[i] <= 'z' ? (char)(code[i] - 'a' + 'A') : code[i];
    up[6] = 0;
    if (!foyer__code_ok((const uint8_t *)up)) return FOYER_EINVAL;
    memset(&r, 0, sizeof r);
    r.type = FOYER_EXT_JOIN;
    r.code = up;
    r.password = password;
    return foyer__ext_seat(c, &r, (foyer_type)0, seat);
}

int foyer_quick_join(foyer_client *c, const foyer_filter *f, foyer_seat *seat) {
    foyer_ext_request r;
    foyer_message m;
    foyer_room best = {0}, e;
    size_t i, count;
    int err, found = 0;
    memset(&r, 0, sizeof r);
    r.type = FOYER_EXT_QUICK;
    r.filter = f;
    if ((err = foyer__ext_seat(c, &r, (foyer_type)0, seat)) != FOYER_ENOTSUP) return err;
    if ((err = foyer__seed_list(c, f, &m, NULL, 0, &count)) != FOYER_OK) return err;
    for (i = 0; i < m.room_count; i++) {
        foyer__room(m.payload + 2 + 11 * i, &e);
        if (foyer__matches(f, &e) && e.state <= FOYER_COUNTDOWN && e.players < e.max_players &&
            (!found || e.players > best.players)) {
            best = e;
            found = 1;
        }
    }
    if (found && foyer__seat(c, FOYER_JOIN_ROOM, best.id, seat) == FOYER_OK) return FOYER_OK;
    return foyer__seat(c, FOYER_CREATE_ROOM, 0, seat);
}

#endif /* FOYER_IMPLEMENTED */
#endif /* FOYER_IMPLEMENTATION */
