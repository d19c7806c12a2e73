/*
 * The warm launch client, compiled: what `wire.py` does as a script (see its
 * docstring for the protocol and both command lines), without starting a
 * Python interpreter, which costs about 10 ms of every warm run and of every
 * module a run executes.
 *
 *   wire-client --socket S [--status F] -- PROGRAM ARGS...
 *   wire-client --socket S --python P [ARGS...]
 *
 * Messages are length-prefixed `marshal` dicts. This client writes the subset
 * it needs (dict, list, str, int) and reads the launcher's answers ({"pid"},
 * {"cold"}, {"exit"}, {"signal"}), whose keys and values are str or int.
 * The environment is sent as the Python client's os.environ has it: with
 * Python's start-up coercion of a C locale (LC_CTYPE=C.UTF-8, PEP 538), the
 * first of duplicate names, and each byte that is not UTF-8 as a lone
 * surrogate; so the launcher's child sees the same environment with either.
 *
 * Built by `make venv` (and by the image) next to wire.py; without it the
 * runner uses wire.py.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>

extern char **environ;

#define LOST_EXIT 111
#define MAX_MESSAGE (64u * 1024u * 1024u)
static const char ANSIBALLZ_MARK[] = "_ANSIBALLZ_WRAPPER = True";
static const int RELAYED[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

/* -- a growing byte buffer ------------------------------------------------ */

typedef struct {
    unsigned char *data;
    size_t len, cap;
} buf_t;

static void put(buf_t *b, const void *src, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        unsigned char *grown = realloc(b->data, cap);
        if (!grown) { perror("wire-client"); _exit(1); }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
}

static void put_u32le(buf_t *b, uint32_t v) {
    unsigned char le[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >> 24) & 0xff};
    put(b, le, 4);
}

/* -- marshal writing ------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if invalid. */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

/* A str as Python decodes bytes from the OS (UTF-8, surrogateescape), written as
 * marshal writes str (UTF-8 with surrogatepass). */
static void put_str(buf_t *b, const char *text, size_t n) {
    buf_t u = {0};
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_sequence(s + i, n - i);
        if (len) {
            put(&u, s + i, len);
            i += len;
        } else { /* U+DC00 + byte, as surrogateescape decodes it */
            uint32_t cp = 0xdc00 + s[i];
            unsigned char enc[3] = {0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)};
            put(&u, enc, 3);
            i++;
        }
    }
    put(b, "u", 1);
    put_u32le(b, (uint32_t)u.len);
    if (u.len) put(b, u.data, u.len);
    free(u.data);
}

static void put_cstr(buf_t *b, const char *s) { put_str(b, s, strlen(s)); }

static void put_int(buf_t *b, int32_t v) {
    put(b, "i", 1);
    put_u32le(b, (uint32_t)v);
}

/* A whole message: 4-byte big-endian length, then the body. */
static void frame(buf_t *out, const buf_t *body) {
    unsigned char be[4] = {body->len >> 24, (body->len >> 16) & 0xff, (body->len >> 8) & 0xff,
                           body->len & 0xff};
    put(out, be, 4);
    put(out, body->data, body->len);
}

/* -- marshal reading (the launcher's answers) ----------------------------- */

typedef struct {
    char key[16];
    int is_int;
    long number;
    char text[512];
} entry_t;

typedef struct {
    const unsigned char *p, *end;
} reader_t;

static int get_u32le(reader_t *r, uint32_t *v) {
    if (r->end - r->p < 4) return -1;
    *v = r->p[0] | (r->p[1] << 8) | (r->p[2] << 16) | ((uint32_t)r->p[3] << 24);
    r->p += 4;
    return 0;
}

/* One str or int object; 0 on success. */
static int get_object(reader_t *r, int *is_int, long *number, char *text, size_t size) {
    if (r->p >= r->end) return -1;
    unsigned char type = *r->p++ & 0x7f; /* without FLAG_REF */
    uint32_t n;
    switch (type) {
    case 'i':
        if (get_u32le(r, &n)) return -1;
        *is_int = 1;
        *number = (int32_t)n;
        return 0;
    case 'z': case 'Z':
        if (r->p >= r->end) return -1;
        n = *r->p++;
        break;
    case 'a': case 'A': case 'u': case 't':
        if (get_u32le(r, &n)) return -1;
        break;
    default:
        return -1;
    }
    if ((uint32_t)(r->end - r->p) < n) return -1;
    *is_int = 0;
    size_t keep = n < size - 1 ? n : size - 1;
    memcpy(text, r->p, keep);
    text[keep] = '\0';
    r->p += n;
    return 0;
}

/* A one-entry dict, as every answer is; 0 on success. */
static int parse_answer(const unsigned char *body, size_t len, entry_t *e) {
    reader_t r = {body, body + len};
    if (r.p >= r.end || (*r.p++ & 0x7f) != '{') return -1;
    int is_int;
    long ignored;
    if (get_object(&r, &is_int, &ignored, e->key, sizeof e->key) || is_int) return -1;
    if (get_object(&r, &e->is_int, &e->number, e->text, sizeof e->text)) return -1;
    return 0;
}

/* -- socket I/O ----------------------------------------------------------- */

static int sock_fd = -1;

static int read_exactly(int fd, unsigned char *into, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, into + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) return got ? -2 : 1; /* 1: clean end of stream */
        got += (size_t)r;
    }
    return 0;
}

/* The next answer: 0 ok, 1 end of stream, -1 error (why in `why`). */
static int receive(entry_t *e, char *why, size_t size) {
    unsigned char head[4];
    int rc = read_exactly(sock_fd, head, 4);
    if (rc == 1) return 1;
    if (rc) { snprintf(why, size, "%s", rc == -2 ? "connection closed inside a message" : strerror(errno)); return -1; }
    uint32_t len = ((uint32_t)head[0] << 24) | (head[1] << 16) | (head[2] << 8) | head[3];
    if (len > MAX_MESSAGE) { snprintf(why, size, "message of %u bytes is too large", len); return -1; }
    unsigned char *body = malloc(len ? len : 1);
    if (!body) { snprintf(why, size, "out of memory"); return -1; }
    rc = read_exactly(sock_fd, body, len);
    if (rc) { free(body); snprintf(why, size, "connection closed inside a message"); return -1; }
    rc = parse_answer(body, len, e);
    free(body);
    if (rc) { snprintf(why, size, "undecodable message"); return -1; }
    return 0;
}

static int send_all(int fd, const unsigned char *data, size_t n, int with_fds) {
    size_t sent = 0;
    if (with_fds) {
        int fds[3] = {0, 1, 2};
        char control[CMSG_SPACE(sizeof fds)];
        memset(control, 0, sizeof control);
        struct iovec iov = {(void *)data, n};
        struct msghdr msg = {0};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof fds);
        memcpy(CMSG_DATA(c), fds, sizeof fds);
        ssize_t r;
        do r = sendmsg(fd, &msg, MSG_NOSIGNAL); while (r < 0 && errno == EINTR);
        if (r < 0) return -1;
        sent = (size_t)r;
    }
    while (sent < n) {
        ssize_t r = send(fd, data + sent, n - sent, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        sent += (size_t)r;
    }
    return 0;
}

/* -- the client ------------------------------------------------------------- */

static void write_status(const char *path, const char *text) {
    if (!path) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ssize_t ignored = write(fd, text, strlen(text));
    (void)ignored;
    close(fd);
}

/* Become argv the ordinary way: a cold start. */
static void exec_cold(char **argv, const char *status, const char *note) {
    if (status) write_status(status, note);
    if (sock_fd >= 0) close(sock_fd);
    execv(argv[0], argv);
    fprintf(stderr, "wire-client: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* A cold start with the note `<before><why><after>`. */
static void exec_cold_noting(char **argv, const char *status, const char *before, const char *why,
                             const char *after) {
    char note[700];
    snprintf(note, sizeof note, "%s%s%s", before, why, after);
    exec_cold(argv, status, note);
}

/* A cold start because the launcher could not be reached. */
static void exec_cold_unavailable(char **argv, const char *status, const char *why) {
    exec_cold_noting(argv, status, "cold: launcher unavailable (", why, ")");
}

/* The payload piped on stdin, moved into a memory file on fd 0 (so whoever runs it
 * still reads it whole): 1 if it is an AnsiballZ payload, 0 if not, -1 if stdin is
 * a terminal or unreadable (never a module). */
static int piped_payload(void) {
    if (isatty(0)) return -1;
    buf_t data = {0};
    unsigned char chunk[1 << 16];
    for (;;) {
        ssize_t r = read(0, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { free(data.data); return data.len ? 0 : -1; }
        if (r == 0) break;
        put(&data, chunk, (size_t)r);
    }
    int memory = memfd_create("ansible-payload", 0);
    if (memory < 0) { free(data.data); return -1; }
    for (size_t done = 0; done < data.len;) {
        ssize_t w = write(memory, data.data + done, data.len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) { free(data.data); close(memory); return -1; }
        done += (size_t)w;
    }
    lseek(memory, 0, SEEK_SET);
    dup2(memory, 0);
    close(memory);
    size_t head = data.len < 4096 ? data.len : 4096;
    int mark = head && memmem(data.data, head, ANSIBALLZ_MARK, sizeof ANSIBALLZ_MARK - 1) != NULL;
    free(data.data);
    return mark;
}

static unsigned char relay_messages[sizeof RELAYED / sizeof RELAYED[0]][64];
static size_t relay_lengths[sizeof RELAYED / sizeof RELAYED[0]];

static void relay(int signum) {
    int saved = errno;
    for (size_t i = 0; i < sizeof RELAYED / sizeof RELAYED[0]; i++)
        if (RELAYED[i] == signum) {
            ssize_t ignored = send(sock_fd, relay_messages[i], relay_lengths[i], MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)ignored;
        }
    errno = saved;
}

static void relay_signals(void) {
    for (size_t i = 0; i < sizeof RELAYED / sizeof RELAYED[0]; i++) {
        buf_t body = {0}, whole = {0};
        put(&body, "{", 1);
        put_cstr(&body, "signal");
        put_int(&body, RELAYED[i]);
        put(&body, "0", 1);
        frame(&whole, &body);
        memcpy(relay_messages[i], whole.data, whole.len);
        relay_lengths[i] = whole.len;
        free(body.data);
        free(whole.data);
        struct sigaction sa = {0};
        sa.sa_handler = relay;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(RELAYED[i], &sa, NULL);
    }
}

/* What the Python client's interpreter does at start (PEP 538): a C locale, with
 * LC_ALL unset, is coerced to the first UTF-8 one available, exported as LC_CTYPE. */
static void coerce_locale_as_python(void) {
    const char *all = getenv("LC_ALL");
    if (all && *all) return;
    setlocale(LC_CTYPE, "");
    const char *current = setlocale(LC_CTYPE, NULL);
    if (!current || strcmp(current, "C") != 0) return;
    static const char *const targets[] = {"C.UTF-8", "C.utf8", "UTF-8"};
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        if (!setlocale(LC_CTYPE, targets[t])) continue;
        const char *codeset = nl_langinfo(CODESET);
        if (codeset && *codeset) {
            setenv("LC_CTYPE", targets[t], 1);
            return;
        }
    }
}

/* Whether an earlier entry of environ has the same name (os.environ keeps the first). */
static int seen_before(char **entry, size_t name_len) {
    for (char **e = environ; e < entry; e++)
        if (!strncmp(*e, *entry, name_len) && (*e)[name_len] == '=') return 1;
    return 0;
}

static void usage(void) {
    fputs("usage: wire-client --socket S [--status F] -- PROGRAM ARGS... | --python P ARGS...\n", stderr);
    exit(1);
}

int main(int argc, char **argv) {
    const char *socket_path = NULL, *status = NULL, *python = NULL;
    int i = 1;
    while (i < argc) {
        if (!strcmp(argv[i], "--")) { i++; break; }
        if (i + 1 < argc && !strcmp(argv[i], "--socket")) socket_path = argv[i + 1];
        else if (i + 1 < argc && !strcmp(argv[i], "--status")) status = argv[i + 1];
        else if (i + 1 < argc && !strcmp(argv[i], "--python")) { python = argv[i + 1]; i += 2; break; }
        else { fprintf(stderr, "wire-client: unexpected argument '%s'\n", argv[i]); exit(1); }
        i += 2;
    }
    if (!socket_path || (!python && i >= argc)) usage();

    /* The program to start: PROGRAM ARGS..., or P ARGS... for a module. */
    int count = argc - i + (python ? 1 : 0);
    char **program = calloc((size_t)count + 1, sizeof *program);
    if (!program) return 1;
    int k = 0;
    if (python) program[k++] = (char *)python;
    for (int j = i; j < argc; j++) program[k++] = argv[j];
    const char *kind = python ? "module" : "program";
    if (python) {
        int nargs = argc - i;
        int warm = 0;
        if (nargs == 1) {
            const char *base = strrchr(argv[i], '/');
            warm = strncmp(base ? base + 1 : argv[i], "AnsiballZ_", 10) == 0;
        } else if (nargs == 0) {
            warm = piped_payload() == 1;
        }
        if (!warm) exec_cold(program, NULL, "");
        status = NULL; /* modules report no launcher status */
    }

    coerce_locale_as_python();

    /* The request: what a launcher needs to start the program as if exec'd here. */
    mode_t mask = umask(0);
    umask(mask);
    char *cwd = getcwd(NULL, 0);
    buf_t body = {0}, message = {0};
    put(&body, "{", 1);
    put_cstr(&body, "kind");
    put_cstr(&body, kind);
    put_cstr(&body, "argv");
    put(&body, "[", 1);
    put_u32le(&body, (uint32_t)count);
    for (int j = 0; j < count; j++) put_cstr(&body, program[j]);
    put_cstr(&body, "env");
    put(&body, "{", 1);
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || seen_before(e, (size_t)(eq - *e))) continue; /* as os.environ */
        put_str(&body, *e, (size_t)(eq - *e));
        put_cstr(&body, eq + 1);
    }
    put(&body, "0", 1);
    put_cstr(&body, "cwd");
    put_cstr(&body, cwd ? cwd : "/");
    put_cstr(&body, "umask");
    put_int(&body, (int32_t)mask);
    put(&body, "0", 1);
    frame(&message, &body);
    free(cwd);

    char why[600];
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(socket_path) >= sizeof address.sun_path) {
        exec_cold_unavailable(program, status, "socket path too long");
    }
    strcpy(address.sun_path, socket_path);
    sock_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock_fd < 0 || connect(sock_fd, (struct sockaddr *)&address, sizeof address) < 0 ||
        send_all(sock_fd, message.data, message.len, 1) < 0) {
        snprintf(why, sizeof why, "[Errno %d] %s", errno, strerror(errno));
        exec_cold_unavailable(program, status, why);
    }
    free(body.data);
    free(message.data);

    entry_t started = {0};
    int rc = receive(&started, why, sizeof why);
    if (rc < 0) exec_cold_unavailable(program, status, why);
    if (rc == 1) exec_cold(program, status, "cold: launcher closed the connection");
    if (!strcmp(started.key, "cold"))
        exec_cold_noting(program, status, "cold: ", started.is_int ? "refused" : started.text, "");
    write_status(status, "warm");
    relay_signals();

    entry_t ended = {0};
    rc = receive(&ended, why, sizeof why);
    if (rc == 1) snprintf(why, sizeof why, "launcher closed the connection");
    if (rc != 0 || !ended.is_int || (strcmp(ended.key, "exit") && strcmp(ended.key, "signal"))) {
        char note[700];
        snprintf(note, sizeof note, "lost: %s", rc == 0 ? "launcher closed the connection" : why);
        write_status(status, note);
        _exit(LOST_EXIT);
    }
    if (!strcmp(ended.key, "signal")) { /* end as the program did: killed by its signal */
        int signum = (int)ended.number;
        signal(signum, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, signum);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        kill(getpid(), signum);
        _exit(128 + signum); /* a signal whose default is not to terminate */
    }
    _exit((int)ended.number & 0xff);
}
