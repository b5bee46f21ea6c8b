/* Tests of foyer.h: the shared golden packets, retries and replies on real
 * loopback sockets, and, given a lobby's host and port, a real lobby:
 *
 *     foyer_test GOLDEN_JSON [HOST PORT [N]]
 *
 * With N, it prints instead of the live tests the mean round trip of N
 * LISTs and of N JOINs (the extension's, answered EXT_REFUSED) there.
 */
#define FOYER_IMPLEMENTATION
#include "../foyer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

static int failures, checks;

#define CHECK(cond, ...)                                        \
    do {                                                        \
        checks++;                                               \
        if (!(cond)) {                                          \
            failures++;                                         \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);     \
            fprintf(stderr, __VA_ARGS__);                       \
            fputc('\n', stderr);                                \
        }                                                       \
    } while (0)

/* --- a JSON reader just big enough for golden.json ------------------------ */

typedef struct json {
    enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } kind;
    double num;
    char *str;             /* J_STR */
    struct json *kids;     /* J_ARR, J_OBJ: values */
    char **keys;           /* J_OBJ */
    size_t len;
} json;

static const char *src;

static void ws(void) { while (*src == ' ' || *src == '\n' || *src == '\r' || *src == '\t') src++; }

static char *jstring(void) {
    const char *start = ++src;
    char *s;
    while (*src != '"') src += *src == '\\' ? 2 : 1; /* golden.json escapes nothing but quotes */
    s = malloc((size_t)(src - start) + 1);
    memcpy(s, start, (size_t)(src - start));
    s[src - start] = 0;
    src++;
    return s;
}

static json jvalue(void) {
    json v;
    memset(&v, 0, sizeof v);
    ws();
    if (*src == '{' || *src == '[') {
        int obj = *src++ == '{';
        v.kind = obj ? J_OBJ : J_ARR;
        for (ws(); *src != '}' && *src != ']'; ws()) {
            v.kids = realloc(v.kids, (v.len + 1) * sizeof *v.kids);
            if (obj) {
                v.keys = realloc(v.keys, (v.len + 1) * sizeof *v.keys);
                v.keys[v.len] = jstring();
                ws();
                src++; /* : */
            }
            v.kids[v.len++] = jvalue();
            ws();
            if (*src == ',') src++;
        }
        src++;
    } else if (*src == '"') {
        v.kind = J_STR;
        v.str = jstring();
    } else if (!strncmp(src, "true", 4) || !strncmp(src, "false", 5)) {
        v.kind = J_BOOL;
        v.num = *src == 't';
        src += *src == 't' ? 4 : 5;
    } else {
        char *end;
        v.kind = J_NUM;
        v.num = strtod(src, &end);
        src = end;
    }
    return v;
}

static const json *get(const json *o, const char *key) {
    size_t i;
    for (i = 0; o->kind == J_OBJ && i < o->len; i++)
        if (!strcmp(o->keys[i], key)) return &o->kids[i];
    return NULL;
}

static double num(const json *o, const char *key) {
    const json *v = get(o, key);
    return v ? v->num : 0;
}

static const char *str(const json *o, const char *key) {
    const json *v = get(o, key);
    return v && v->kind == J_STR ? v->str : "";
}

static size_t unhex(const char *h, uint8_t *out) {
    size_t n = 0;
    unsigned x;
    for (; h[0] && h[1]; h += 2) {
        sscanf(h, "%2x", &x);
        out[n++] = (uint8_t)x;
    }
    return n;
}

/* --- golden packets ------------------------------------------------------- */

static const char *const type_names[] = {"LIST_ROOMS", "ROOM_LIST", "CREATE_ROOM", "ROOM_CREATED",
                                         "JOIN_ROOM", "JOIN_SUCCESS", "JOIN_FAILED"};
static const char *const state_names[] = {"waiting", "countdown", "playing", "finished"};

static uint8_t pkt[FOYER_MAX_DATAGRAM], scratch[FOYER_MAX_PAYLOAD];
static foyer_room rooms[FOYER_MAX_ROOMS];

static const char *const ext_names[] = {"EXT_LIST", "EXT_ROOMS", "EXT_CREATE", "EXT_SEAT", "EXT_JOIN",
                                        "EXT_REFUSED", "EXT_QUICK", "EXT_RETRY", "EXT_PRESENT", "EXT_ADMITTED"};

static void hex_of(const uint8_t *b, size_t n, char *out) {
    size_t i;
    for (i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", b[i]);
    out[2 * n] = 0;
}

/* tags_of turns golden.json's [[key, value], ...] into "key=value" strings. */
static size_t tags_of(const json *pairs, char text[4][64], const char *ptrs[4]) {
    size_t i;
    for (i = 0; pairs && i < pairs->len && i < 4; i++) {
        snprintf(text[i], 64, "%s=%s", pairs->kids[i].kids[0].str, pairs->kids[i].kids[1].str);
        ptrs[i] = text[i];
    }
    return pairs ? pairs->len : 0;
}

static int same_tags(const foyer_room *r, const json *pairs) {
    size_t i;
    if (r->tag_count != (pairs ? pairs->len : 0)) return 0;
    for (i = 0; i < r->tag_count; i++)
        if (strcmp(r->tags[i].key, pairs->kids[i].kids[0].str) || strcmp(r->tags[i].value, pairs->kids[i].kids[1].str))
            return 0;
    return 1;
}

static void test_ext_golden(const json *g) {
    const json *ext = get(g, "ext");
    size_t i, k, encoded = 0, decoded = 0;
    for (i = 0; i < ext->len; i++) {
        const json *p = &ext->kids[i], *m = get(p, "msg");
        const char *name = str(p, "name"), *type = str(m, "type");
        size_t n = unhex(str(p, "hex"), pkt), cut;
        char hex[2 * 1200 + 1];
        int t = 0;
        while (t < 10 && strcmp(ext_names[t], type)) t++;
        CHECK(t < 10, "%s: type %s", name, type);
        if (t % 2 == 0) { /* a request */
            foyer_ext_request r;
            foyer_filter f;
            foyer_create_options o;
            const json *jf = get(m, "filter"), *meta = get(m, "meta");
            char ftext[4][64], otext[4][64];
            const char *ftags[4], *otags[4];
            uint8_t token[64], seat_token[64], out[1200];
            size_t len;
            memset(&r, 0, sizeof r);
            r.framing = strcmp(str(m, "framing"), "legacy") ? FOYER_COMPACT : FOYER_LEGACY;
            r.type = (foyer_type)(0x80 + t);
            r.seq = (uint16_t)num(m, "seq");
            r.tick = (uint32_t)num(m, "tick");
            r.token = token;
            r.token_len = unhex(str(m, "token"), token);
            r.pad = (size_t)num(m, "pad");
            unhex(str(m, "client"), r.client);
            r.cursor = (uint32_t)num(m, "cursor");
            r.limit = (uint8_t)num(m, "limit");
            r.room = (uint32_t)num(m, "room");
            r.code = str(m, "code");
            r.seat_token = seat_token;
            r.seat_token_len = unhex(str(m, "seat_token"), seat_token);
            if (jf) {
                int states = (int)num(jf, "states");
                memset(&f, 0, sizeof f);
                f.has_state = states != 0;
                while (states > 1) { states >>= 1; f.state++; }
                f.free_seats = (int)num(jf, "min_free");
                f.mode = *str(jf, "mode") ? str(jf, "mode") : NULL;
                f.map = *str(jf, "map") ? str(jf, "map") : NULL;
                f.name_prefix = *str(jf, "name_prefix") ? str(jf, "name_prefix") : NULL;
                f.tag_count = tags_of(get(jf, "tags"), ftext, ftags);
                f.tags = ftags;
                r.filter = &f;
            }
            if (meta) {
                memset(&o, 0, sizeof o);
                o.name = str(meta, "name");
                o.mode = str(meta, "mode");
                o.map = str(meta, "map");
                o.tag_count = tags_of(get(meta, "tags"), otext, otags);
                o.tags = otags;
                o.private_room = get(m, "private") != NULL;
                o.password = str(m, "password");
                r.create = &o;
            } else {
                r.password = str(m, "password");
            }
            len = foyer_encode_ext(out, sizeof out, &r);
            hex_of(out, len, hex);
            CHECK(!strcmp(hex, str(p, "hex")), "%s: encodes to %s", name, hex);
            encoded++;
            continue;
        }
        {
            foyer_message d;
            const json *want = get(m, "entries");
            int why = foyer_decode(pkt, n, &d, rooms, FOYER_MAX_ROOMS, scratch);
            CHECK(why == 0, "%s: refused: %s", name, foyer_malformed_name(why));
            if (why) continue;
            decoded++;
            CHECK((int)d.type == 0x80 + t && !strcmp(d.framing == FOYER_LEGACY ? "legacy" : "compact", str(m, "framing")) &&
                      d.seq == num(m, "seq") && d.tick == num(m, "tick"), "%s: header", name);
            hex_of(d.token, d.token_len, hex);
            CHECK(!strcmp(hex, str(m, "token")), "%s: token %s", name, hex);
            hex_of(d.seat_token, d.seat_token_len, hex);
            CHECK(!strcmp(hex, str(m, "seat_token")), "%s: seat token %s", name, hex);
            CHECK(d.room == num(m, "room") && d.port == num(m, "port") && !strcmp(d.code, str(m, "code")) &&
                      !strcmp(d.address, str(m, "addr")) && d.next == num(m, "next") && (int)d.reason == num(m, "reason"),
                  "%s: fields", name);
            CHECK(d.room_count == (want ? want->len : 0), "%s: %zu entries", name, d.room_count);
            for (k = 0; want && k < want->len && k < d.room_count; k++) {
                const json *e = &want->kids[k];
                const foyer_room *r = &rooms[k];
                CHECK(r->id == num(e, "id") && r->players == num(e, "players") && r->max_players == num(e, "max_players") &&
                          r->port == num(e, "port") && !strcmp(state_names[r->state], str(e, "state")) &&
                          r->has_password == (int)num(e, "password") && !strcmp(r->code, str(e, "code")) &&
                          !strcmp(r->name, str(e, "name")) && !strcmp(r->mode, str(e, "mode")) &&
                          !strcmp(r->map, str(e, "map")) && same_tags(r, get(e, "tags")),
                      "%s: entry %zu", name, k);
            }
            for (cut = 0; cut < n; cut++)
                CHECK(foyer_decode(pkt, cut, &d, rooms, FOYER_MAX_ROOMS, scratch) != 0, "%s: prefix %zu decodes", name, cut);
        }
    }
    CHECK(encoded >= 10 && decoded >= 9, "extension goldens: %zu encoded, %zu decoded", encoded, decoded);
}

static void test_golden(const json *g) {
    const json *packets = get(g, "packets"), *bad = get(g, "malformed");
    size_t i, k, encoded = 0;
    for (i = 0; i < packets->len; i++) {
        const json *p = &packets->kids[i], *want = get(p, "rooms");
        const char *name = str(p, "name");
        size_t n = unhex(str(p, "hex"), pkt), cut;
        foyer_message m;
        int why = foyer_decode(pkt, n, &m, rooms, FOYER_MAX_ROOMS, scratch);
        CHECK(why == 0, "%s: refused: %s", name, foyer_malformed_name(why));
        if (why) continue;
        CHECK(!strcmp(type_names[m.type - 0x40], str(p, "type")), "%s: type %#x", name, m.type);
        CHECK(!strcmp(m.framing == FOYER_LEGACY ? "legacy" : "compact", str(p, "framing")), "%s: framing", name);
        CHECK(m.seq == num(p, "seq") && m.tick == num(p, "tick"), "%s: seq %u tick %u", name, m.seq, m.tick);
        CHECK(m.compressed == (get(p, "compressed") && get(p, "compressed")->num), "%s: compressed", name);
        CHECK(m.room == num(p, "room") && m.port == num(p, "port"), "%s: room %u port %u", name, m.room, m.port);
        CHECK(m.room_count == (want ? want->len : 0), "%s: %zu rooms", name, m.room_count);
        for (k = 0; want && k < want->len && k < m.room_count; k++) {
            const json *r = &want->kids[k];
            CHECK(rooms[k].id == num(r, "id") && rooms[k].players == num(r, "players") &&
                      rooms[k].max_players == num(r, "max_players") && rooms[k].port == num(r, "port") &&
                      !strcmp(state_names[rooms[k].state], str(r, "state")),
                  "%s: room %zu", name, k);
        }
        if (m.type == FOYER_LIST_ROOMS || m.type == FOYER_CREATE_ROOM || m.type == FOYER_JOIN_ROOM) {
            uint8_t out[32];
            size_t len = foyer_encode_request(out, sizeof out, m.framing, m.type, (uint16_t)num(p, "seq"),
                                              (uint32_t)num(p, "tick"), (uint32_t)num(p, "room"));
            CHECK(len == n && !memcmp(out, pkt, n), "%s: encodes otherwise", name);
            encoded++;
        }
        for (cut = 0; cut < n; cut++)
            CHECK(foyer_decode(pkt, cut, &m, rooms, FOYER_MAX_ROOMS, scratch) != 0, "%s: prefix %zu decodes", name, cut);
    }
    CHECK(encoded >= 6, "only %zu requests encoded", encoded);
    test_ext_golden(g);
    for (i = 0; i < bad->len + get(g, "ext_malformed")->len; i++) {
        const json *p = i < bad->len ? &bad->kids[i] : &get(g, "ext_malformed")->kids[i - bad->len];
        size_t n = unhex(str(p, "hex"), pkt);
        foyer_message m;
        int why = foyer_decode(pkt, n, &m, rooms, FOYER_MAX_ROOMS, scratch);
        CHECK(!strcmp(foyer_malformed_name(why), str(p, "reason")), "%s: refused as %s, want %s", str(p, "name"),
              foyer_malformed_name(why), str(p, "reason"));
    }
}

/* --- a silent lobby on loopback: retries, replies and refusals ----------- */

static foyer_client client; /* static: it holds its buffers */

static int udp_bound(char *port, size_t cap) {
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&a, sizeof a);
    getsockname(fd, (struct sockaddr *)&a, &alen);
    snprintf(port, cap, "%u", ntohs(a.sin_port));
    return fd;
}

/* reply sends the compact reply of type t (payload p) with sequence id seq
 * from the lobby socket to the client's socket. */
static void reply(int lobby, uint8_t t, uint16_t seq, const uint8_t *p, size_t n) {
    uint8_t b[128];
    struct sockaddr_in to;
    socklen_t tolen = sizeof to;
    b[0] = 2; b[1] = t; b[2] = (uint8_t)(seq >> 8); b[3] = (uint8_t)seq;
    b[4] = 0; b[5] = (uint8_t)n; b[6] = 0; b[7] = (uint8_t)n;
    memcpy(b + 8, p, n);
    {
        uint32_t crc = foyer_crc32(b, 8 + n);
        b[8 + n] = (uint8_t)(crc >> 24); b[9 + n] = (uint8_t)(crc >> 16);
        b[10 + n] = (uint8_t)(crc >> 8); b[11 + n] = (uint8_t)crc;
    }
    getsockname(client.fd, (struct sockaddr *)&to, &tolen);
    sendto(lobby, b, 12 + n, 0, (struct sockaddr *)&to, tolen);
}

static void test_scripted(void) {
    char port[8];
    int lobby = udp_bound(port, sizeof port), err, i;
    foyer_options opt = {50, 3, FOYER_COMPACT};
    foyer_seat seat;
    size_t count;
    uint8_t got[3][128], ok[6] = {0, 0, 0, 1, 0x75, 0x30}, other[6] = {0, 0, 0, 7, 0, 9};
    ssize_t len[3];
    foyer_filter by_mode;
    foyer_create_options private_room;

    CHECK(foyer_open(&client, "127.0.0.1", port, &opt) == FOYER_OK, "open");
    err = foyer_list(&client, NULL, rooms, FOYER_MAX_ROOMS, &count);
    CHECK(err == FOYER_ETIMEOUT, "silence: %s", foyer_strerror(err));
    len[0] = recv(lobby, got[0], sizeof got[0], MSG_DONTWAIT);
    len[1] = recv(lobby, got[1], sizeof got[1], MSG_DONTWAIT);
    CHECK(len[0] == 12 && got[0][1] == FOYER_LIST_ROOMS && len[1] == FOYER_PAD_TO && got[1][1] == FOYER_EXT_LIST,
          "the probe: a seed LIST and a padded EXT_LIST: %zd %zd", len[0], len[1]);
    for (i = 0; i < 3; i++) len[i] = recv(lobby, got[i], sizeof got[i], MSG_DONTWAIT);
    CHECK(len[0] == 12 && len[1] == 12 && len[2] == 12 && !memcmp(got[0], got[1], 12) && !memcmp(got[1], got[2], 12),
          "three attempts, one datagram: %zd %zd %zd", len[0], len[1], len[2]);
    CHECK(recv(lobby, got[0], sizeof got[0], MSG_DONTWAIT) < 0, "a fourth attempt");

    /* The replies wait in the client's socket: a stray of a later request
     * and the success of another room come before the answer. */
    reply(lobby, FOYER_JOIN_SUCCESS, (uint16_t)(client.seq + 1), other, 6);
    reply(lobby, FOYER_JOIN_SUCCESS, (uint16_t)(client.seq + 2), ok, 6);
    reply(lobby, FOYER_JOIN_SUCCESS, (uint16_t)(client.seq + 1), ok, 6);
    err = foyer_join(&client, 1, &seat);
    CHECK(err == FOYER_OK && seat.room == 1 && seat.port == 30000 && !strcmp(seat.address, "127.0.0.1"),
          "join: %s, room %u port %u at %s", foyer_strerror(err), seat.room, seat.port, seat.address);
    reply(lobby, FOYER_JOIN_FAILED, (uint16_t)(client.seq + 1), NULL, 0);
    err = foyer_join(&client, 2, &seat);
    CHECK(err == FOYER_EREFUSED && client.reason == FOYER_REASON_UNSPECIFIED, "refused: %s", foyer_strerror(err));

    memset(&by_mode, 0, sizeof by_mode);
    by_mode.mode = "ctf";
    memset(&private_room, 0, sizeof private_room);
    private_room.private_room = 1;
    while (recv(lobby, got[0], sizeof got[0], MSG_DONTWAIT) > 0) {
    }
    CHECK(foyer_join_code(&client, "abcdef", NULL, &seat) == FOYER_ENOTSUP, "join by code");
    CHECK(foyer_quick_join(&client, &by_mode, &seat) == FOYER_ENOTSUP, "quick join by mode");
    CHECK(foyer_list(&client, &by_mode, rooms, 1, &count) == FOYER_ENOTSUP, "filter by mode");
    CHECK(foyer_create(&client, &private_room, &seat) == FOYER_ENOTSUP, "create a private room");
    CHECK(recv(lobby, got[0], sizeof got[0], MSG_DONTWAIT) < 0, "a seed lobby was asked twice, or an extension verb sent something");
    foyer_close(&client);
    close(lobby);

    /* A lobby of the extension: it hands out a retry token, which every
     * request then echoes; retries reuse the datagram; a refusal says why. */
    lobby = udp_bound(port, sizeof port);
    CHECK(foyer_open(&client, "127.0.0.1", port, &opt) == FOYER_OK, "open");
    {
        static const uint8_t retry[] = {1, 4, 't', 'o', 'k', 'n'}, wrong_password[] = {1, 4};
        uint8_t seat_reply[60] = {1, 0, 0, 0, 7, 0x75, 0x30, 'A', 'B', 'C', 'D', 'E', 'F', 4, 192, 0, 2, 7, 41, 1};
        seat_reply[19 + 21] = 0x65; seat_reply[19 + 22] = 0x53; seat_reply[19 + 23] = 0xF1; /* expires 1700000000 */
        reply(lobby, FOYER_EXT_RETRY, (uint16_t)(client.seq + 1), retry, sizeof retry);
        err = foyer_join_code(&client, "abcdef", "pw", &seat);
        CHECK(err == FOYER_ETIMEOUT, "an unanswered EXT_JOIN: %s", foyer_strerror(err));
        recv(lobby, got[0], sizeof got[0], MSG_DONTWAIT); /* the probe's seed LIST */
        len[0] = recv(lobby, got[0], sizeof got[0], MSG_DONTWAIT);
        CHECK(len[0] == FOYER_PAD_TO && got[0][1] == FOYER_EXT_LIST && got[0][9] == 0, "the probe, padded: %zd", len[0]);
        for (i = 0; i < 3; i++) len[i] = recv(lobby, got[i], sizeof got[i], MSG_DONTWAIT);
        CHECK(len[0] > 20 && len[0] == len[1] && len[1] == len[2] && !memcmp(got[0], got[1], (size_t)len[0]) &&
                  !memcmp(got[1], got[2], (size_t)len[0]) && got[0][1] == FOYER_EXT_JOIN && got[0][9] == 4 &&
                  !memcmp(got[0] + 10, "tokn", 4),
              "three attempts of one EXT_JOIN echoing the token: %zd %zd %zd", len[0], len[1], len[2]);
        reply(lobby, FOYER_EXT_REFUSED, (uint16_t)(client.seq + 1), wrong_password, sizeof wrong_password);
        err = foyer_join_code(&client, "ABCDEF", "wrong", &seat);
        CHECK(err == FOYER_EREFUSED && client.reason == FOYER_REASON_WRONG_PASSWORD, "EXT_REFUSED: %s, %s",
              foyer_strerror(err), foyer_reason_name(client.reason));
        reply(lobby, FOYER_EXT_SEAT, (uint16_t)(client.seq + 1), seat_reply, sizeof seat_reply);
        err = foyer_join_code(&client, "ABCDEF", "pw", &seat);
        CHECK(err == FOYER_OK && seat.room == 7 && seat.port == 30000 && !strcmp(seat.code, "ABCDEF") &&
                  !strcmp(seat.address, "192.0.2.7") && seat.token_len == 41 && seat.expires_unix_ms == 1700000000000LL,
              "the extension's seat: %s, room %u at %s, expires %lld", foyer_strerror(err), seat.room, seat.address,
              (long long)seat.expires_unix_ms);
    }
    foyer_close(&client);
    close(lobby);

    lobby = udp_bound(port, sizeof port);
    close(lobby); /* nothing listens there now */
    opt.timeout_ms = 1000;
    foyer_open(&client, "127.0.0.1", port, &opt);
    err = foyer_list(&client, NULL, rooms, 1, &count);
    CHECK(err == FOYER_EUNREACHABLE, "closed port: %s", foyer_strerror(err));
    foyer_close(&client);
}

/* --- a real lobby ----------------------------------------------------------- */

static foyer_client other;

static void test_live(const char *host, const char *port) {
    int f;
    for (f = FOYER_COMPACT; f <= FOYER_LEGACY; f++) {
        foyer_options opt = {0, 0, (foyer_framing)f};
        foyer_filter waiting;
        foyer_seat seat, joined;
        size_t count, i;
        int err, listed = 0;
        memset(&waiting, 0, sizeof waiting);
        waiting.has_state = 1;
        waiting.state = FOYER_WAITING;
        CHECK(foyer_open(&client, host, port, &opt) == 0 && foyer_open(&other, host, port, &opt) == 0, "open");
        err = foyer_create(&client, NULL, &seat);
        CHECK(err == FOYER_OK && seat.port > 0, "framing %d: create: %s", f, foyer_strerror(err));
        err = foyer_list(&other, &waiting, rooms, FOYER_MAX_ROOMS, &count);
        for (i = 0; i < count && i < FOYER_MAX_ROOMS; i++) listed |= rooms[i].id == seat.room;
        CHECK(err == FOYER_OK && listed, "framing %d: list: %s, room %u listed %d", f, foyer_strerror(err), seat.room, listed);
        err = foyer_join(&other, seat.room, &joined);
        CHECK(err == FOYER_OK && joined.room == seat.room && joined.port == seat.port, "framing %d: join: %s", f,
              foyer_strerror(err));
        err = foyer_join(&other, 0xFFFFFFF0u, &joined);
        CHECK(err == FOYER_EREFUSED && other.reason == FOYER_REASON_NOT_FOUND, "framing %d: join a room that is not: %s",
              f, foyer_strerror(err));
        {
            static const char *const tags[] = {"sdk=c"};
            char mode[17], lower[7];
            foyer_create_options named;
            foyer_filter by_mode;
            foyer_seat quick;
            snprintf(mode, sizeof mode, "c%d%c", (int)getpid(), f ? 'l' : 'c'); /* this run's rooms only */
            memset(&named, 0, sizeof named);
            named.name = "C night";
            named.mode = mode;
            named.password = "pw";
            named.tags = tags;
            named.tag_count = 1;
            err = foyer_create(&client, &named, &seat);
            CHECK(err == FOYER_OK && strlen(seat.code) == 6 && seat.token_len > 0 && seat.expires_unix_ms > 0,
                  "framing %d: create a named room: %s", f, foyer_strerror(err));
            memset(&by_mode, 0, sizeof by_mode);
            by_mode.mode = mode;
            by_mode.name_prefix = "C ";
            err = foyer_list(&other, &by_mode, rooms, FOYER_MAX_ROOMS, &count);
            CHECK(err == FOYER_OK && count == 1 && rooms[0].id == seat.room && !strcmp(rooms[0].name, "C night") &&
                      !strcmp(rooms[0].code, seat.code) && rooms[0].has_password && rooms[0].tag_count == 1 &&
                      !strcmp(rooms[0].tags[0].key, "sdk") && !strcmp(rooms[0].tags[0].value, "c"),
                  "framing %d: list by a filter: %s, %zu rooms", f, foyer_strerror(err), count);
            by_mode.name_prefix = "Go";
            err = foyer_list(&other, &by_mode, rooms, FOYER_MAX_ROOMS, &count);
            CHECK(err == FOYER_OK && count == 0, "framing %d: a filter that finds none: %zu", f, count);
            for (i = 0; i < 7; i++) lower[i] = (char)(seat.code[i] >= 'A' && seat.code[i] <= 'Z' ? seat.code[i] + 32 : seat.code[i]);
            err = foyer_join_code(&other, lower, "wrong", &joined);
            CHECK(err == FOYER_EREFUSED && other.reason == FOYER_REASON_WRONG_PASSWORD, "framing %d: a wrong password: %s, %s",
                  f, foyer_strerror(err), foyer_reason_name(other.reason));
            err = foyer_join_code(&other, lower, "pw", &joined);
            CHECK(err == FOYER_OK && joined.room == seat.room && joined.port == seat.port, "framing %d: join by code: %s", f,
                  foyer_strerror(err));
            strcat(mode, "q");
            by_mode.mode = mode;
            by_mode.name_prefix = NULL;
            err = foyer_quick_join(&other, &by_mode, &quick);
            CHECK(err == FOYER_OK && quick.room != seat.room && quick.port > 0 && quick.token_len > 0,
                  "framing %d: quick join: %s", f, foyer_strerror(err));
        }
        foyer_close(&client);
        foyer_close(&other);
    }
}

/* room_socket opens a fresh socket connected to seat's room. */
static int room_socket(const foyer_seat *seat) {
    struct addrinfo hints, *res;
    char port[8];
    int fd = -1;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICHOST;
    snprintf(port, sizeof port, "%u", (unsigned)seat->port);
    if (getaddrinfo(seat->address, port, &hints, &res) != 0) return -1;
    fd = socket(res->ai_family, SOCK_DGRAM, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* bound_socket opens an unconnected UDP socket of family bound to a port
 * of its own on every address (an IPv6 one takes IPv4 too). */
static int bound_socket(int family) {
    struct sockaddr_storage a;
    int fd = socket(family, SOCK_DGRAM, 0), no = 0;
    memset(&a, 0, sizeof a);
    a.ss_family = (sa_family_t)family;
    if (fd >= 0 && family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
    if (fd >= 0 &&
        bind(fd, (struct sockaddr *)&a, family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int family_of(const char *address) { return strchr(address, ':') ? AF_INET6 : AF_INET; }

static int unconnected(int fd) {
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    return getpeername(fd, (struct sockaddr *)&a, &alen) != 0 && errno == ENOTCONN;
}

/* admitted_for writes golden.json's "EXT_ADMITTED room 7" into out with
 * room for 7 and its CRC anew; returns its length. */
static size_t admitted_for(const json *g, uint32_t room, uint8_t *out) {
    const json *ext = get(g, "ext");
    size_t i, n = 0;
    uint32_t crc;
    for (i = 0; i < ext->len && !n; i++)
        if (!strcmp(str(&ext->kids[i], "name"), "EXT_ADMITTED room 7")) n = unhex(str(&ext->kids[i], "hex"), out);
    if (n < 8) return 0;
    out[n - 8] = (uint8_t)(room >> 24); out[n - 7] = (uint8_t)(room >> 16);
    out[n - 6] = (uint8_t)(room >> 8); out[n - 5] = (uint8_t)room;
    crc = foyer_crc32(out, n - 4);
    out[n - 4] = (uint8_t)(crc >> 24); out[n - 3] = (uint8_t)(crc >> 16);
    out[n - 2] = (uint8_t)(crc >> 8); out[n - 1] = (uint8_t)crc;
    return n;
}

/* forge starts a process that sends b every 50 ms, for 5 s at most, from a
 * socket of its own to fd's port on loopback; returns its pid. */
static pid_t forge(int fd, const uint8_t *b, size_t n) {
    struct sockaddr_storage to;
    socklen_t tolen = sizeof to;
    pid_t pid;
    getsockname(fd, (struct sockaddr *)&to, &tolen);
    if (to.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)(void *)&to)->sin6_addr = in6addr_loopback;
    else
        ((struct sockaddr_in *)(void *)&to)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pid = fork();
    if (pid == 0) {
        struct timespec pause = {0, 50000000L};
        int forger = socket(to.ss_family, SOCK_DGRAM, 0), k;
        for (k = 0; k < 100; k++) {
            sendto(forger, b, n, 0, (struct sockaddr *)&to, tolen);
            nanosleep(&pause, NULL);
        }
        _exit(0);
    }
    return pid;
}

/* A seat token shown to the room from a fresh socket is admitted, twice
 * (in, and back into the seat from another socket), then twice more from
 * unconnected sockets (of the seat's family, then an IPv6 one, which sends
 * to an IPv4 seat as ::ffff:a.b.c.d); a forged one is not, from a
 * connected socket nor from an unconnected one that another socket sends
 * a well-formed EXT_ADMITTED for the seat's room meanwhile. */
static void test_live_present(const json *g, const char *host, const char *port) {
    foyer_seat seat;
    int err, k, fd;
    uint8_t admitted[64], got[64];
    size_t n;
    pid_t pid;
    CHECK(foyer_open(&client, host, port, NULL) == 0, "open");
    err = foyer_create(&client, NULL, &seat);
    foyer_close(&client);
    CHECK(err == FOYER_OK && seat.token_len > 0, "create: %s", foyer_strerror(err));
    for (k = 0; k < 2; k++) {
        fd = room_socket(&seat);
        err = foyer_present(fd, &seat, 1000, 0);
        CHECK(fd >= 0 && err == FOYER_OK, "present %d to %s:%u: %s", k, seat.address, seat.port, foyer_strerror(err));
        close(fd);
    }
    for (k = 0; k < 2; k++) {
        int family = k == 0 ? family_of(seat.address) : AF_INET6;
        fd = bound_socket(family);
        err = foyer_present(fd, &seat, 1000, 0);
        CHECK(fd >= 0 && err == FOYER_OK && unconnected(fd), "present from an unconnected socket of family %d to %s:%u: %s",
              family, seat.address, seat.port, foyer_strerror(err));
        close(fd);
    }
    seat.token[seat.token_len - 1] ^= 1; /* its signature no longer holds: the door drops it unanswered */
    fd = room_socket(&seat);
    err = foyer_present(fd, &seat, 300, 2);
    CHECK(err == FOYER_ETIMEOUT, "a forged token: %s", foyer_strerror(err));
    close(fd);
    n = admitted_for(g, seat.room, admitted);
    CHECK(n > 0, "golden.json has no EXT_ADMITTED room 7");
    fd = bound_socket(family_of(seat.address));
    pid = forge(fd, admitted, n);
    err = foyer_present(fd, &seat, 300, 2);
    CHECK(err == FOYER_ETIMEOUT, "a forged token from an unconnected socket, another socket admitting it: %s",
          foyer_strerror(err));
    /* The forger's EXT_ADMITTED did reach the socket: the source dropped it. */
    {
        struct pollfd pfd = {0, POLLIN, 0};
        pfd.fd = fd;
        CHECK(pid > 0 && poll(&pfd, 1, 500) == 1 && recv(fd, got, sizeof got, 0) == (ssize_t)n && !memcmp(got, admitted, n),
              "the forger's EXT_ADMITTED does not reach the presenting socket");
    }
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    close(fd);
}

static int64_t ns_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void bench(const char *host, const char *port, long n) {
    foyer_seat seat;
    size_t count;
    int64_t t0, t1, t2;
    long i;
    foyer_open(&client, host, port, NULL);
    foyer_list(&client, NULL, rooms, FOYER_MAX_ROOMS, &count);
    t0 = ns_now();
    for (i = 0; i < n; i++) CHECK(foyer_list(&client, NULL, rooms, FOYER_MAX_ROOMS, &count) == FOYER_OK, "bench list");
    t1 = ns_now();
    for (i = 0; i < n; i++) CHECK(foyer_join(&client, 0xFFFFFFF0u, &seat) == FOYER_EREFUSED, "bench join");
    t2 = ns_now();
    foyer_close(&client);
    printf("list_ns=%lld join_ns=%lld\n", (long long)((t1 - t0) / n), (long long)((t2 - t1) / n));
}

int main(int argc, char **argv) {
    static char text[1 << 16];
    FILE *f;
    size_t n;
    json g;
    if (argc != 2 && argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s GOLDEN_JSON [HOST PORT [N]]\n", argv[0]);
        return 2;
    }
    f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    src = text;
    g = jvalue();
    test_golden(&g);
    test_scripted();
    if (argc == 4) {
        test_live(argv[2], argv[3]);
        test_live_present(&g, argv[2], argv[3]);
    }
    if (argc == 5) bench(argv[2], argv[3], atol(argv[4]));
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
