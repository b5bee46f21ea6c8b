/* Tests of foyer.h: the shared golden packets, retries and replies on real
 * loopback sockets, and, given a lobby's host and port, a real lobby:
 *
 *     foyer_test GOLDEN_JSON [HOST PORT [N]]
 *
 * With N, it then prints the mean round trip of N LISTs and of N JOINs
 * (answered JOIN_FAILED) against that lobby.
 */
#define FOYER_IMPLEMENTATION
#include "../foyer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

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
    for (i = 0; i < bad->len; i++) {
        const json *p = &bad->kids[i];
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
    uint8_t b[64];
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
    uint8_t got[3][64], ok[6] = {0, 0, 0, 1, 0x75, 0x30}, other[6] = {0, 0, 0, 7, 0, 9};
    ssize_t len[3];
    foyer_filter by_mode;
    foyer_create_options named;

    CHECK(foyer_open(&client, "127.0.0.1", port, &opt) == FOYER_OK, "open");
    err = foyer_list(&client, NULL, rooms, FOYER_MAX_ROOMS, &count);
    CHECK(err == FOYER_ETIMEOUT, "silence: %s", foyer_strerror(err));
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
    memset(&named, 0, sizeof named);
    named.name = "x";
    while (recv(lobby, got[0], sizeof got[0], MSG_DONTWAIT) > 0) {
    }
    CHECK(foyer_join_code(&client, "ABCDEF", NULL, &seat) == FOYER_ENOTSUP, "join by code");
    CHECK(foyer_quick_join(&client, NULL, &seat) == FOYER_ENOTSUP, "quick join");
    CHECK(foyer_list(&client, &by_mode, rooms, 1, &count) == FOYER_ENOTSUP, "filter by mode");
    CHECK(foyer_create(&client, &named, &seat) == FOYER_ENOTSUP, "create with a name");
    CHECK(recv(lobby, got[0], sizeof got[0], MSG_DONTWAIT) < 0, "an extension verb sent something");
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
        CHECK(err == FOYER_EREFUSED, "framing %d: join a room that is not: %s", f, foyer_strerror(err));
        foyer_close(&client);
        foyer_close(&other);
    }
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
    if (argc >= 4) test_live(argv[2], argv[3]);
    if (argc == 5) bench(argv[2], argv[3], atol(argv[4]));
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
