/* harness/base/safetensors.c — safetensors reader and writer (safetensors.h), JSON by cJSON. */
#include "harness/base/safetensors.h"
#include "harness/base/atomic_file.h"
#include "harness/base/out_path.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

static const char *const dtype_names[] = {"F32", "F64", "I32", "I64"};
static const size_t dtype_sizes[] = {4, 8, 4, 8};

static int dtype_parse(const char *s, enum pb_st_dtype *out)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, dtype_names[i])) {
            *out = (enum pb_st_dtype)i;
            return 0;
        }
    return -1;
}

static void st_push(struct pb_safetensors *st, struct pb_st_tensor t)
{
    if (st->n == st->cap) {
        st->cap = st->cap ? 2 * st->cap : 16;
        st->t = realloc(st->t, (size_t)st->cap * sizeof *st->t);
        PB_CHECK(st->t != NULL);
    }
    st->t[st->n++] = t;
}

/* A JSON number that is a whole number in [0, 2^53] (what an index or a size must be). */
static bool whole(const cJSON *v, double *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double x = v->valuedouble;
    if (!(x >= 0 && x <= 9007199254740992.0) || x != floor(x))
        return false;
    *out = x;
    return true;
}

static int parse_entry(struct pb_safetensors *st, const cJSON *it, size_t data_len, const char *path,
                       struct pb_err *e)
{
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(it, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
    struct pb_st_tensor t = {0};
    if (pb_st_find(st, it->string))
        return pb_err_set(e, "%s: tensor '%s' appears twice in the header (corrupt file)", path,
                          it->string);
    if (!cJSON_IsString(dt) || dtype_parse(dt->valuestring, &t.dtype))
        return pb_err_set(e, "%s: tensor '%s' has a missing or unsupported dtype (supported: F32, "
                             "F64, I32, I64)", path, it->string);
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > PB_ST_MAX_DIMS)
        return pb_err_set(e, "%s: tensor '%s' has a bad shape", path, it->string);
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
        return pb_err_set(e, "%s: tensor '%s' has bad data_offsets", path, it->string);
    t.ndim = cJSON_GetArraySize(shape);
    t.count = 1;
    for (int d = 0; d < t.ndim; d++) {
        double x;
        if (!whole(cJSON_GetArrayItem(shape, d), &x))
            return pb_err_set(e, "%s: tensor '%s': shape entry %d is not a whole number of "
                                 "elements (corrupt file)", path, it->string, d);
        t.shape[d] = (int64_t)x;
        if (t.shape[d] && t.count > SIZE_MAX / dtype_sizes[t.dtype] / (size_t)t.shape[d])
            return pb_err_set(e, "%s: tensor '%s': its shape holds more elements than memory "
                                 "can (corrupt file)", path, it->string);
        t.count *= (size_t)t.shape[d];
    }
    double b, en;
    if (!whole(cJSON_GetArrayItem(offs, 0), &b) || !whole(cJSON_GetArrayItem(offs, 1), &en) ||
        en < b || en > (double)data_len || (size_t)(en - b) != t.count * dtype_sizes[t.dtype])
        return pb_err_set(e, "%s: tensor '%s': data_offsets do not match its shape or lie "
                             "outside the file's %zu data bytes (truncated or corrupt file?)",
                          path, it->string, data_len);
    t.name = pb_xstrdup(it->string);
    t.data = (const unsigned char *)(size_t)b; /* made absolute by the caller */
    t.end = (size_t)en;
    st_push(st, t);
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const struct pb_st_tensor *x = *(const struct pb_st_tensor *const *)a;
    const struct pb_st_tensor *y = *(const struct pb_st_tensor *const *)b;
    size_t ox = (size_t)x->data, oy = (size_t)y->data;
    return ox < oy ? -1 : ox > oy ? 1 : 0;
}

/* The format's rule: the tensors' byte ranges tile the data section, in any order,
 * without holes or overlaps. Offsets are still relative here. */
static int check_tiling(const struct pb_safetensors *st, size_t data_len, const char *path,
                        struct pb_err *e)
{
    const struct pb_st_tensor **order = pb_xmalloc((size_t)(st->n ? st->n : 1) * sizeof *order);
    for (int i = 0; i < st->n; i++)
        order[i] = &st->t[i];
    qsort(order, (size_t)st->n, sizeof *order, by_offset);
    size_t at = 0;
    int rc = 0;
    for (int i = 0; i < st->n && !rc; i++) {
        size_t b = (size_t)order[i]->data;
        if (b != at)
            rc = pb_err_set(e, "%s: tensor '%s' starts at data byte %zu where the previous one "
                               "ends at %zu (overlapping or gapped data; corrupt file)", path,
                            order[i]->name, b, at);
        at = order[i]->end;
    }
    if (!rc && at != data_len)
        rc = pb_err_set(e, "%s: the tensors cover %zu of the %zu data bytes (corrupt file)", path,
                        at, data_len);
    free(order);
    return rc;
}

/* Whether v is a JSON object whose values are all strings (the format's __metadata__). */
static bool string_map(const cJSON *v)
{
    if (!cJSON_IsObject(v))
        return false;
    for (const cJSON *x = v->child; x; x = x->next)
        if (!cJSON_IsString(x))
            return false;
    return true;
}

/* Parses the file in st->blob (len bytes and a spare one after them, owned by st);
 * path names it in messages. */
static int parse_blob(struct pb_safetensors *st, size_t len, const char *path, struct pb_err *e)
{
    if (len < 8) {
        pb_st_finish(st);
        return pb_err_set(e, "'%s' is not a safetensors file (only %zu bytes)", path, len);
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | st->blob[i];
    if (hlen > (uint64_t)len - 8) {
        pb_st_finish(st);
        return pb_err_set(e, "'%s': header length %llu exceeds the file size %zu (corrupt or not "
                             "a safetensors file)", path, (unsigned long long)hlen, len);
    }
    char saved = (char)st->blob[8 + hlen];
    st->blob[8 + hlen] = 0;
    cJSON *root = cJSON_Parse((const char *)st->blob + 8);
    st->blob[8 + hlen] = (unsigned char)saved;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        pb_st_finish(st);
        return pb_err_set(e, "'%s': the header is not a JSON object (corrupt file?)", path);
    }
    size_t data_len = len - 8 - (size_t)hlen;
    const unsigned char *data = st->blob + 8 + hlen;
    const cJSON *it;
    int rc = 0;
    unsigned long sum = 0;
    bool has_sum = false, seen_meta = false;
    cJSON_ArrayForEach(it, root)
    {
        if (!strcmp(it->string, "__metadata__")) {
            if (seen_meta) {
                rc = pb_err_set(e, "%s: __metadata__ appears twice in the header (corrupt file)",
                                path);
                break;
            }
            if (!string_map(it)) {
                rc = pb_err_set(e, "%s: __metadata__ is not an object of string values (the "
                                   "format's rule; corrupt file)", path);
                break;
            }
            seen_meta = true;
            const cJSON *crc = cJSON_GetObjectItemCaseSensitive(it, PB_ST_CRC_KEY);
            if (crc) {
                char *end;
                sum = strtoul(crc->valuestring, &end, 16);
                has_sum = *crc->valuestring && !*end;
            }
            while (cJSON_GetObjectItemCaseSensitive(it, PB_ST_CRC_KEY))
                cJSON_DeleteItemFromObjectCaseSensitive((cJSON *)it, PB_ST_CRC_KEY);
            /* nothing but the checksum, or nothing at all: no metadata */
            if (it->child)
                st->metadata = cJSON_PrintUnformatted(it);
            continue;
        }
        if ((rc = parse_entry(st, it, data_len, path, e)))
            break;
    }
    cJSON_Delete(root);
    if (!rc)
        rc = check_tiling(st, data_len, path, e);
    /* a file written without the checksum (before it was kept, or by another program)
       loads unchecked, as before */
    uLong got = has_sum && !rc ? crc32_z(crc32_z(0, NULL, 0), data, data_len) : 0;
    if (has_sum && !rc && got != sum)
        rc = pb_err_set(e, "'%s' is damaged: its tensor data do not match the checksum written "
                           "with them (%s %08lx, the data give %08lx); restore it from a copy or write it "
                           "again", path, PB_ST_CRC_KEY, sum,
                        (unsigned long)got);
    if (rc) {
        pb_st_finish(st);
        return -1;
    }
    for (int i = 0; i < st->n; i++)
        st->t[i].data = data + (size_t)st->t[i].data;
    return 0;
}

int pb_st_load(struct pb_safetensors *st, const char *path, struct pb_err *e)
{
    memset(st, 0, sizeof *st);
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return pb_err_set(e, "'%s' is not a file (a safetensors checkpoint is; give its path)",
                          path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return pb_err_set(e, "cannot open '%s': %s", path, strerror(errno));
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return pb_err_set(e, "cannot read '%s': it cannot be sized (not a regular file?)", path);
    }
    st->blob = pb_xmalloc((size_t)len + 1);
    size_t got = fread(st->blob, 1, (size_t)len, f);
    fclose(f);
    if (got != (size_t)len) {
        pb_st_finish(st);
        return pb_err_set(e, "cannot read '%s'", path);
    }
    return parse_blob(st, (size_t)len, path, e);
}

int pb_st_load_mem(struct pb_safetensors *st, const void *bytes, size_t len, const char *name,
                   struct pb_err *e)
{
    memset(st, 0, sizeof *st);
    st->blob = pb_xmalloc(len + 1);
    if (len)
        memcpy(st->blob, bytes, len);
    return parse_blob(st, len, name, e);
}

void pb_st_finish(struct pb_safetensors *st)
{
    for (int i = 0; i < st->n; i++)
        free(st->t[i].name);
    free(st->t);
    free(st->blob);
    free(st->metadata);
    memset(st, 0, sizeof *st);
}

const struct pb_st_tensor *pb_st_find(const struct pb_safetensors *st, const char *name)
{
    for (int i = 0; i < st->n; i++)
        if (!strcmp(st->t[i].name, name))
            return &st->t[i];
    return NULL;
}

/* "[a, b, c]" */
static const char *shape_text(int ndim, const int64_t *shape, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

/* "'a', 'b', ..." of the first names in the file, for a message. */
static const char *some_names(const struct pb_safetensors *st, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < st->n && i < 6 && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s'%s'", i ? ", " : "", st->t[i].name);
    if (st->n > 6 && n < cap)
        snprintf(buf + n, cap - n, " and %d more", st->n - 6);
    return buf;
}

int pb_st_read_f32_shaped(const struct pb_safetensors *st, const char *name, float *out, int ndim,
                          const int64_t *shape, struct pb_err *e)
{
    const struct pb_st_tensor *t = pb_st_find(st, name);
    char a[128], b[128], names[512];
    if (!t)
        return pb_err_set(e, "tensor '%s' is missing (the file holds %s)", name,
                          st->n ? some_names(st, names, sizeof names) : "no tensors");
    bool same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = t->shape[d] == shape[d];
    if (!same)
        return pb_err_set(e, "tensor '%s' has shape %s, expected %s", name,
                          shape_text(t->ndim, t->shape, a, sizeof a),
                          shape_text(ndim, shape, b, sizeof b));
    size_t count = 1;
    for (int d = 0; d < ndim; d++)
        count *= (size_t)shape[d];
    return pb_st_read_f32(st, name, out, count, e);
}

int pb_st_read_f32(const struct pb_safetensors *st, const char *name, float *out, size_t count,
                   struct pb_err *e)
{
    const struct pb_st_tensor *t = pb_st_find(st, name);
    if (!t)
        return pb_err_set(e, "tensor '%s' is missing", name);
    if (t->count != count)
        return pb_err_set(e, "tensor '%s' has %zu elements, expected %zu", name, t->count, count);
    if (t->dtype == PB_ST_F32) {
        memcpy(out, t->data, count * sizeof(float));
    } else if (t->dtype == PB_ST_F64) {
        for (size_t i = 0; i < count; i++) {
            double v;
            memcpy(&v, t->data + i * 8, 8);
            out[i] = (float)v;
        }
    } else {
        return pb_err_set(e, "tensor '%s' is %s, expected F32", name, dtype_names[t->dtype]);
    }
    return 0;
}

void pb_st_writer_init(struct pb_safetensors *w)
{
    memset(w, 0, sizeof *w);
}

void pb_st_add(struct pb_safetensors *w, const char *name, enum pb_st_dtype dtype, int ndim,
               const int64_t *shape, const void *data)
{
    PB_CHECK(ndim >= 0 && ndim <= PB_ST_MAX_DIMS);
    struct pb_st_tensor t = {.name = pb_xstrdup(name), .dtype = dtype, .ndim = ndim, .count = 1,
                             .data = data};
    for (int d = 0; d < ndim; d++) {
        t.shape[d] = shape[d];
        t.count *= (size_t)shape[d];
    }
    st_push(w, t);
}

int pb_st_save(const struct pb_safetensors *w, const char *path, const char *metadata,
               struct pb_err *e)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *m = metadata ? cJSON_Parse(metadata) : cJSON_CreateObject();
    PB_CHECK(cJSON_IsObject(m));
    uLong sum = crc32_z(0, NULL, 0);
    for (int i = 0; i < w->n; i++)
        sum = crc32_z(sum, w->t[i].data, w->t[i].count * dtype_sizes[w->t[i].dtype]);
    char hex[16];
    snprintf(hex, sizeof hex, "%08lx", (unsigned long)sum);
    cJSON_DeleteItemFromObjectCaseSensitive(m, PB_ST_CRC_KEY);
    cJSON_AddStringToObject(m, PB_ST_CRC_KEY, hex);
    cJSON_AddItemToObject(root, "__metadata__", m);
    size_t off = 0;
    for (int i = 0; i < w->n; i++) {
        const struct pb_st_tensor *t = &w->t[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "dtype", dtype_names[t->dtype]);
        cJSON *shape = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; d < t->ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[d]));
        cJSON *offs = cJSON_AddArrayToObject(o, "data_offsets");
        size_t bytes = t->count * dtype_sizes[t->dtype];
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + bytes)));
        off += bytes;
        cJSON_AddItemToObject(root, t->name, o);
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    size_t jlen = strlen(json), padded = (jlen + 7) / 8 * 8;

    char *tmp = pb_afile_tmp_name(path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        int err = errno;
        free(json);
        free(tmp);
        return pb_err_set(e, "cannot write '%s': %s", path, strerror(err));
    }
    unsigned char hdr[8];
    for (int i = 0; i < 8; i++)
        hdr[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int ok = fwrite(hdr, 1, 8, f) == 8 && fwrite(json, 1, jlen, f) == jlen;
    for (size_t i = jlen; ok && i < padded; i++)
        ok = fputc(' ', f) != EOF;
    for (int i = 0; ok && i < w->n; i++) {
        size_t bytes = w->t[i].count * dtype_sizes[w->t[i].dtype];
        ok = fwrite(w->t[i].data, 1, bytes, f) == bytes;
    }
    ok = (fclose(f) == 0) && ok;
    free(json);
    if (ok && pb_out_path_replaceable(path, e)) {
        remove(tmp);
        free(tmp);
        return -1;
    }
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        remove(tmp);
        free(tmp);
        return pb_err_set(e, "cannot write '%s': %s", path, strerror(err));
    }
    free(tmp);
    return 0;
}
