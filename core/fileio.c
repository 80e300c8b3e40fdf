// Readers and writers of llm.c's binary files (the contract is in fileio.h).
#define _DEFAULT_SOURCE // fchmod, fsync, mkstemp under -std=c11
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "checked.h"
#include "fileio.h"

int error_set(Error *err, const char *name, const char *fmt, ...) {
    char detail[400];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof(detail), fmt, args);
    va_end(args);
    snprintf(err->message, sizeof(err->message), "%s: %s", name, detail);
    return -1;
}

// ----------------------------------------------------------------------------
// opening, reading

static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

static int not_regular(Error *err, const char *path, const char *what, mode_t mode) {
    return error_set(err, path, "is %s, not a regular file: expected a %s", file_kind(mode), what);
}

int fileio_open_regular(const char *path, const char *what, uint64_t *size, Error *err) {
    struct stat st;
    // stat first: a device or FIFO is refused without being opened at all
    if (stat(path, &st) != 0) return error_set(err, path, "cannot open %s: %s", what, strerror(errno));
    if (!S_ISREG(st.st_mode)) return not_regular(err, path, what, st.st_mode);
    // O_NONBLOCK: should the path have become a FIFO since, open returns at once
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return error_set(err, path, "cannot open %s: %s", what, strerror(errno));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return error_set(err, path, "cannot open %s: %s", what, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return not_regular(err, path, what, st.st_mode);
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *size = (uint64_t)st.st_size;
    return fd;
}

int fileio_check_regular(const char *path, const char *what, Error *err) {
    uint64_t size;
    int fd = fileio_open_regular(path, what, &size, err);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

// Reads up to n bytes; returns how many (fewer at end of file or on error).
static size_t read_full(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        size_t want = n - got < ((size_t)1 << 30) ? n - got : ((size_t)1 << 30);
        ssize_t r = read(fd, (char *)buf + got, want);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

// Bytes from a file or from memory, in order.
typedef struct {
    int fd;                    // when data is NULL
    const unsigned char *data; // memory
    size_t size, pos;
} Source;

// Reads n bytes; 0, or -1 when fewer were there.
static int source_read(Source *s, void *dst, size_t n) {
    if (n == 0) return 0;
    if (s->data) {
        if (s->size - s->pos < n) return -1;
        memcpy(dst, s->data + s->pos, n);
        s->pos += n;
        return 0;
    }
    return read_full(s->fd, dst, n) == n ? 0 : -1;
}

// The header: up to HEADER_BYTES bytes; *len receives how many there were.
static void source_header(Source *s, unsigned char header[HEADER_BYTES], size_t *len) {
    if (s->data) {
        *len = s->size - s->pos < HEADER_BYTES ? s->size - s->pos : HEADER_BYTES;
        memcpy(header, s->data + s->pos, *len);
        s->pos += *len;
    } else {
        *len = read_full(s->fd, header, HEADER_BYTES);
    }
}

// The header's ints after checking length, magic and version.
static int header_ints(const void *header, size_t len, uint64_t file_size, const char *name, const char *what,
                       int magic, int version, int32_t h[HEADER_INTS], Error *err) {
    if (len < HEADER_BYTES || file_size < HEADER_BYTES)
        return error_set(err, name, "truncated %s: %llu bytes, shorter than the %d-byte header", what,
                         (unsigned long long)file_size, HEADER_BYTES);
    memcpy(h, header, HEADER_BYTES);
    if (h[0] != magic) return error_set(err, name, "not a %s: magic number %d, expected %d", what, h[0], magic);
    if (h[1] != version) return error_set(err, name, "unsupported %s version %d, expected %d", what, h[1], version);
    return 0;
}

// Refuses an allocation of `bytes` above the memory limit.
static int check_memory(uint64_t bytes, const char *name, const char *what, Error *err) {
    uint64_t limit = gpt2_memory_limit();
    if (bytes > limit)
        return error_set(err, name, "%s needs %.1f GB of memory, more than the limit of %.1f GB", what, bytes / 1e9,
                         limit / 1e9);
    return 0;
}

// ----------------------------------------------------------------------------
// checkpoints

int checkpoint_parse_header(const void *header, size_t len, uint64_t file_size, const char *name,
                            GPT2Config *config, Error *err) {
    int32_t h[HEADER_INTS];
    if (header_ints(header, len, file_size, name, "checkpoint", CHECKPOINT_MAGIC, CHECKPOINT_VERSION, h, err))
        return -1;
    GPT2Config c = {h[2], h[3], h[7], h[4], h[5], h[6]};
    char why[200];
    uint64_t n;
    if (gpt2_num_parameters(&c, &n, why, sizeof(why)) != 0)
        return error_set(err, name, "invalid checkpoint header (maxT=%d V=%d Vp=%d L=%d NH=%d C=%d): %s",
                         c.max_seq_len, c.vocab_size, c.padded_vocab_size, c.num_layers, c.num_heads, c.channels, why);
    int ok = 1;
    uint64_t expected = ck_add(HEADER_BYTES, ck_mul(n, sizeof(float), &ok), &ok);
    if (!ok || expected != file_size)
        return error_set(err, name, "checkpoint header inconsistent with file size: header implies %llu bytes, file has %llu",
                         (unsigned long long)expected, (unsigned long long)file_size);
    *config = c;
    return 0;
}

int checkpoint_parse(const void *data, size_t size, const char *name, GPT2Config *config, float **params,
                     size_t *num_parameters, Error *err) {
    *params = NULL;
    *num_parameters = 0;
    GPT2Config c;
    if (checkpoint_parse_header(data, size, size, name, &c, err) != 0) return -1;
    size_t n = (size - HEADER_BYTES) / sizeof(float); // the header check made it exact
    if (check_memory((uint64_t)n * sizeof(float), name, "the checkpoint's parameters", err)) return -1;
    float *p = malloc(n * sizeof(float));
    if (!p) return error_set(err, name, "out of memory for %zu parameters", n);
    memcpy(p, (const unsigned char *)data + HEADER_BYTES, n * sizeof(float));
    *config = c;
    *params = p;
    *num_parameters = n;
    return 0;
}

int checkpoint_read_config(const char *path, GPT2Config *config, Error *err) {
    uint64_t size;
    int fd = fileio_open_regular(path, "checkpoint", &size, err);
    if (fd < 0) return -1;
    unsigned char header[HEADER_BYTES];
    size_t len = read_full(fd, header, HEADER_BYTES);
    close(fd);
    return checkpoint_parse_header(header, len, size, path, config, err);
}

int checkpoint_read_params(const char *path, GPT2 *model, Error *err) {
    uint64_t size;
    int fd = fileio_open_regular(path, "checkpoint", &size, err);
    if (fd < 0) return -1;
    unsigned char header[HEADER_BYTES];
    size_t len = read_full(fd, header, HEADER_BYTES);
    GPT2Config c;
    if (checkpoint_parse_header(header, len, size, path, &c, err) != 0) {
        close(fd);
        return -1;
    }
    if (memcmp(&c, &model->config, sizeof(c)) != 0 ||
        size != HEADER_BYTES + (uint64_t)model->num_parameters * sizeof(float)) {
        close(fd);
        return error_set(err, path, "checkpoint changed while it was being read");
    }
    size_t got = read_full(fd, model->params_memory, model->num_parameters * sizeof(float)) / sizeof(float);
    close(fd);
    if (got != model->num_parameters)
        return error_set(err, path, "truncated checkpoint: %zu of %zu parameters", got, model->num_parameters);
    return 0;
}

// The directory part of path ("." when there is none); malloc'd.
static char *directory_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (dir) {
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    return dir;
}

// Creates "<dir>/.<base>.tmp-XXXXXX" beside path; returns its descriptor
// (name in *tmp, malloc'd), or -1 with err set.
static int create_temp_beside(const char *path, const char *what, char **tmp, Error *err) {
    *tmp = NULL;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return error_set(err, path, "cannot write %s: it is %s", what, file_kind(st.st_mode));
    char *dir = directory_of(path);
    if (!dir) return error_set(err, path, "out of memory");
    if (stat(dir, &st) != 0) {
        int e = errno;
        error_set(err, path, "cannot write %s: directory %s: %s", what, dir, strerror(e));
        free(dir);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        error_set(err, path, "cannot write %s: %s is not a directory", what, dir);
        free(dir);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(dir) + strlen(base) + 16;
    char *name = malloc(n);
    if (!name) {
        free(dir);
        return error_set(err, path, "out of memory");
    }
    snprintf(name, n, "%s/.%s.tmp-XXXXXX", dir, base);
    int fd = mkstemp(name);
    if (fd < 0) {
        int e = errno;
        error_set(err, path, "cannot write %s into directory %s: %s", what, dir, strerror(e));
        free(dir);
        free(name);
        return -1;
    }
    free(dir);
    *tmp = name;
    return fd;
}

int checkpoint_check_destination(const char *path, Error *err) {
    return fileio_check_destination(path, "checkpoint", err);
}

int fileio_is_dev_null(const char *path) {
    struct stat st, null;
    return stat(path, &st) == 0 && S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 &&
           S_ISCHR(null.st_mode) && st.st_rdev == null.st_rdev;
}

int fileio_check_destination(const char *path, const char *what, Error *err) {
    if (path[0] == '\0' || path[strlen(path) - 1] == '/')
        return error_set(err, path, "cannot write %s: not a file name", what);
    // one rule for every output: a regular file, existing or new, or /dev/null to discard it;
    // any other device, a FIFO or a socket is refused by create_temp_beside
    if (fileio_is_dev_null(path)) return 0;
    char *tmp;
    int fd = create_temp_beside(path, what, &tmp, err);
    if (fd < 0) return -1;
    close(fd);
    unlink(tmp);
    free(tmp);
    return 0;
}

static int write_full(int fd, const void *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < ((size_t)1 << 30) ? n - done : ((size_t)1 << 30);
        ssize_t w = write(fd, (const char *)buf + done, want);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        done += (size_t)w;
    }
    return 0;
}

int checkpoint_write(const char *path, const GPT2 *model, Error *err) {
    if (path[0] == '\0' || path[strlen(path) - 1] == '/')
        return error_set(err, path, "cannot write checkpoint: not a file name");
    if (fileio_is_dev_null(path)) return 0; // discarded on purpose (renaming over it would replace the device)
    int32_t h[HEADER_INTS] = {0};
    const GPT2Config *c = &model->config;
    h[0] = CHECKPOINT_MAGIC;
    h[1] = CHECKPOINT_VERSION;
    h[2] = c->max_seq_len;
    h[3] = c->vocab_size;
    h[4] = c->num_layers;
    h[5] = c->num_heads;
    h[6] = c->channels;
    h[7] = c->padded_vocab_size;
    char *tmp;
    int fd = create_temp_beside(path, "checkpoint", &tmp, err);
    if (fd < 0) return -1;
    // mkstemp makes the file 0600; give it what fopen would have (0666 less the umask)
    mode_t mask = umask(0);
    umask(mask);
    int ok = fchmod(fd, 0666 & ~mask) == 0 && write_full(fd, h, sizeof(h)) == 0 &&
             write_full(fd, model->params_memory, model->num_parameters * sizeof(float)) == 0 && fsync(fd) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        free(tmp);
        return error_set(err, path, "cannot write checkpoint: %s", strerror(e));
    }
    free(tmp);
    // the rename itself reaches the disk with the directory
    char *dir = directory_of(path);
    if (dir) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    return 0;
}

// ----------------------------------------------------------------------------
// token files

int tokens_parse_header(const void *header, size_t len, uint64_t file_size, const char *name, size_t *count,
                        Error *err) {
    int32_t h[HEADER_INTS];
    if (header_ints(header, len, file_size, name, "token file", TOKENS_MAGIC, TOKENS_VERSION, h, err)) return -1;
    int ok = 1;
    uint64_t n = ck_u64(h[2], &ok);
    uint64_t expected = ck_add(HEADER_BYTES, ck_mul(n, sizeof(uint16_t), &ok), &ok);
    if (!ok || n == 0 || expected != file_size)
        return error_set(err, name, "token file header inconsistent with file size: %d tokens imply %llu bytes, file has %llu",
                         h[2], (unsigned long long)expected, (unsigned long long)file_size);
    if (check_memory(n * sizeof(uint16_t), name, "the token file", err)) return -1;
    *count = (size_t)n;
    return 0;
}

int tokens_check(const uint16_t *tokens, size_t count, int vocab_size, const char *name, Error *err) {
    for (size_t i = 0; i < count; i++)
        if (tokens[i] >= vocab_size)
            return error_set(err, name, "token %d at position %zu is outside the vocabulary (V=%d)", tokens[i], i,
                             vocab_size);
    return 0;
}

static int tokens_load(Source *src, uint64_t size, const char *name, int vocab_size, TokenFile *out, Error *err) {
    memset(out, 0, sizeof(*out));
    unsigned char header[HEADER_BYTES];
    size_t len, count;
    source_header(src, header, &len);
    if (tokens_parse_header(header, len, size, name, &count, err) != 0) return -1;
    out->tokens = malloc(count * sizeof(uint16_t));
    if (!out->tokens) return error_set(err, name, "out of memory for %zu tokens", count);
    if (source_read(src, out->tokens, count * sizeof(uint16_t)) != 0) {
        tokens_free(out);
        return error_set(err, name, "truncated token file: fewer than %zu tokens", count);
    }
    out->count = count;
    if (tokens_check(out->tokens, count, vocab_size, name, err) != 0) {
        tokens_free(out);
        return -1;
    }
    return 0;
}

int tokens_parse(const void *data, size_t size, const char *name, int vocab_size, TokenFile *out, Error *err) {
    Source src = {-1, data, size, 0};
    return tokens_load(&src, size, name, vocab_size, out, err);
}

int tokens_read(const char *path, int vocab_size, TokenFile *out, Error *err) {
    memset(out, 0, sizeof(*out));
    uint64_t size;
    int fd = fileio_open_regular(path, "token file", &size, err);
    if (fd < 0) return -1;
    Source src = {fd, NULL, 0, 0};
    int rc = tokens_load(&src, size, path, vocab_size, out, err);
    close(fd);
    return rc;
}

void tokens_free(TokenFile *tokens) {
    free(tokens->tokens);
    tokens->tokens = NULL;
    tokens->count = 0;
}

// ----------------------------------------------------------------------------
// debug states

int debug_state_parse_header(const void *header, size_t len, uint64_t file_size, const char *name,
                             const GPT2Config *config, size_t num_parameters, int *B_out, int *T_out, Error *err) {
    int32_t h[HEADER_INTS];
    if (header_ints(header, len, file_size, name, "debug state", DEBUG_STATE_MAGIC, DEBUG_STATE_VERSION, h, err))
        return -1;
    char why[200];
    if (gpt2_config_check(config, why, sizeof(why)) != 0) return error_set(err, name, "invalid model: %s", why);
    int B = h[2], T = h[3], V = config->vocab_size;
    if (B <= 0 || T <= 0) return error_set(err, name, "invalid debug state header: B=%d T=%d must be positive", B, T);
    if (T > config->max_seq_len)
        return error_set(err, name, "debug state T=%d exceeds the model's max_seq_len %d", T, config->max_seq_len);
    if (B > GPT2_MAX_BATCH)
        return error_set(err, name, "invalid debug state header: B=%d exceeds the limit %d", B, GPT2_MAX_BATCH);
    if ((long long)B * T > GPT2_MAX_ROWS)
        return error_set(err, name, "invalid debug state header: B*T=%lld exceeds the limit %d", (long long)B * T,
                         GPT2_MAX_ROWS);
    int ok = 1;
    uint64_t BT = ck_mul((uint64_t)B, (uint64_t)T, &ok);
    // inputs and targets, logits, the loss, the gradients
    uint64_t payload = ck_mul3(2, BT, sizeof(int32_t), &ok);
    payload = ck_add(payload, ck_mul3(BT, (uint64_t)V, sizeof(float), &ok), &ok);
    payload = ck_add(payload, sizeof(float), &ok);
    payload = ck_add(payload, ck_mul(num_parameters, sizeof(float), &ok), &ok);
    uint64_t expected = ck_add(HEADER_BYTES, payload, &ok);
    if (!ok || expected != file_size)
        return error_set(err, name, "debug state header inconsistent with file size (or with the model): expected %llu bytes, file has %llu",
                         (unsigned long long)expected, (unsigned long long)file_size);
    if (check_memory(payload, name, "the debug state", err)) return -1;
    *B_out = B;
    *T_out = T;
    return 0;
}

static int debug_state_load(Source *src, uint64_t size, const char *name, const GPT2Config *config,
                            size_t num_parameters, DebugState *out, Error *err) {
    memset(out, 0, sizeof(*out));
    unsigned char header[HEADER_BYTES];
    size_t len;
    int B, T, V = config->vocab_size;
    source_header(src, header, &len);
    if (debug_state_parse_header(header, len, size, name, config, num_parameters, &B, &T, err) != 0) return -1;
    // sizes bounded by the header check: BT <= GPT2_MAX_ROWS, BT * V * 4 <= size
    size_t BT = (size_t)B * (size_t)T;
    out->B = B;
    out->T = T;
    out->inputs = malloc(BT * sizeof(int));
    out->targets = malloc(BT * sizeof(int));
    out->logits = malloc(BT * (size_t)V * sizeof(float));
    out->grads = malloc((num_parameters ? num_parameters : 1) * sizeof(float));
    if (!out->inputs || !out->targets || !out->logits || !out->grads) {
        debug_state_free(out);
        return error_set(err, name, "out of memory reading debug state");
    }
    if (source_read(src, out->inputs, BT * sizeof(int)) || source_read(src, out->targets, BT * sizeof(int)) ||
        source_read(src, out->logits, BT * (size_t)V * sizeof(float)) || source_read(src, &out->loss, sizeof(float)) ||
        source_read(src, out->grads, num_parameters * sizeof(float))) {
        debug_state_free(out);
        return error_set(err, name, "truncated debug state");
    }
    for (size_t i = 0; i < BT; i++) {
        if (out->inputs[i] < 0 || out->inputs[i] >= V || out->targets[i] < 0 || out->targets[i] >= V) {
            int bad = out->inputs[i] < 0 || out->inputs[i] >= V ? out->inputs[i] : out->targets[i];
            debug_state_free(out);
            return error_set(err, name, "token %d at position %zu is outside the vocabulary (V=%d)", bad, i, V);
        }
    }
    return 0;
}

int debug_state_parse(const void *data, size_t size, const char *name, const GPT2Config *config,
                      size_t num_parameters, DebugState *out, Error *err) {
    Source src = {-1, data, size, 0};
    return debug_state_load(&src, size, name, config, num_parameters, out, err);
}

int debug_state_read(const char *path, const GPT2Config *config, size_t num_parameters, DebugState *out,
                     Error *err) {
    memset(out, 0, sizeof(*out));
    uint64_t size;
    int fd = fileio_open_regular(path, "debug state", &size, err);
    if (fd < 0) return -1;
    Source src = {fd, NULL, 0, 0};
    int rc = debug_state_load(&src, size, path, config, num_parameters, out, err);
    close(fd);
    return rc;
}

void debug_state_free(DebugState *state) {
    free(state->inputs);
    free(state->targets);
    free(state->logits);
    free(state->grads);
    memset(state, 0, sizeof(*state));
}

// ----------------------------------------------------------------------------
// expected losses

int expected_losses_parse(const char *text, size_t len, const char *name, float *losses, int max, int *count,
                          Error *err) {
    *count = 0;
    const char *nul = memchr(text, '\0', len);
    if (nul) return error_set(err, name, "not a text file: NUL byte at offset %zu", (size_t)(nul - text));
    char *copy = malloc(len + 1);
    if (!copy) return error_set(err, name, "out of memory");
    memcpy(copy, text, len);
    copy[len] = '\0';
    const char *separators = " \t\r\n,";
    char *p = copy;
    int n = 0;
    while (n < max) {
        p += strspn(p, separators);
        if (!*p) break;
        size_t wlen = strcspn(p, separators);
        char saved = p[wlen];
        p[wlen] = '\0';
        char *end;
        float v = strtof(p, &end);
        if (*end || end == p) {
            error_set(err, name, "'%.40s%s' is not a number", p, wlen > 40 ? "..." : "");
            free(copy);
            return -1;
        }
        losses[n++] = v;
        p[wlen] = saved;
        p += wlen;
    }
    free(copy);
    *count = n;
    return 0;
}

int expected_losses_read(const char *path, float *losses, int max, int *count, Error *err) {
    uint64_t size;
    int fd = fileio_open_regular(path, "losses file", &size, err);
    if (fd < 0) return -1;
    if (size > EXPECTED_LOSSES_MAX_BYTES) {
        close(fd);
        return error_set(err, path, "expected losses file of %llu bytes, larger than the limit %d",
                         (unsigned long long)size, EXPECTED_LOSSES_MAX_BYTES);
    }
    char *text = malloc(size ? size : 1);
    if (!text) {
        close(fd);
        return error_set(err, path, "out of memory");
    }
    size_t got = read_full(fd, text, size);
    close(fd);
    int rc = expected_losses_parse(text, got, path, losses, max, count, err);
    free(text);
    return rc;
}
