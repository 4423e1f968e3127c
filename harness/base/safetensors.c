/* harness/base/safetensors.c — safetensors reader and writer (safetensors.h), JSON by cJSON. */
#include "harness/base/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

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

static int parse_entry(struct pb_safetensors *st, const cJSON *it, size_t data_len, const char *path,
                       struct pb_err *e)
{
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(it, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
    struct pb_st_tensor t = {0};
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
        const cJSON *v = cJSON_GetArrayItem(shape, d);
        if (!cJSON_IsNumber(v) || v->valuedouble < 0)
            return pb_err_set(e, "%s: tensor '%s' has a bad shape", path, it->string);
        t.shape[d] = (int64_t)v->valuedouble;
        t.count *= (size_t)t.shape[d];
    }
    double b = cJSON_GetArrayItem(offs, 0)->valuedouble, en = cJSON_GetArrayItem(offs, 1)->valuedouble;
    if (b < 0 || en < b || en > (double)data_len || (size_t)(en - b) != t.count * dtype_sizes[t.dtype])
        return pb_err_set(e, "%s: tensor '%s': data_offsets [%.0f, %.0f) do not match its shape "
                             "or lie outside the file's %zu data bytes (truncated or corrupt file?)",
                          path, it->string, b, en, data_len);
    t.name = pb_xstrdup(it->string);
    t.data = (const unsigned char *)(size_t)b; /* made absolute by the caller */
    st_push(st, t);
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
    if (len < 8) {
        fclose(f);
        return pb_err_set(e, "'%s' is not a safetensors file (only %ld bytes)", path, len);
    }
    st->blob = pb_xmalloc((size_t)len + 1);
    size_t got = fread(st->blob, 1, (size_t)len, f);
    fclose(f);
    if (got != (size_t)len) {
        pb_st_finish(st);
        return pb_err_set(e, "cannot read '%s'", path);
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | st->blob[i];
    if (hlen > (uint64_t)len - 8) {
        pb_st_finish(st);
        return pb_err_set(e, "'%s': header length %llu exceeds the file size %ld (corrupt or not "
                             "a safetensors file)", path, (unsigned long long)hlen, len);
    }
    char saved = st->blob[8 + hlen];
    st->blob[8 + hlen] = 0;
    cJSON *root = cJSON_Parse((const char *)st->blob + 8);
    st->blob[8 + hlen] = (unsigned char)saved;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        pb_st_finish(st);
        return pb_err_set(e, "'%s': the header is not a JSON object (corrupt file?)", path);
    }
    size_t data_len = (size_t)len - 8 - hlen;
    const unsigned char *data = st->blob + 8 + hlen;
    const cJSON *it;
    cJSON_ArrayForEach(it, root)
    {
        if (!strcmp(it->string, "__metadata__")) {
            st->metadata = cJSON_PrintUnformatted(it);
            continue;
        }
        if (parse_entry(st, it, data_len, path, e)) {
            cJSON_Delete(root);
            pb_st_finish(st);
            return -1;
        }
        st->t[st->n - 1].data = data + (size_t)st->t[st->n - 1].data;
    }
    cJSON_Delete(root);
    return 0;
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
    if (metadata) {
        cJSON *m = cJSON_Parse(metadata);
        PB_CHECK(cJSON_IsObject(m));
        cJSON_AddItemToObject(root, "__metadata__", m);
    }
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

    size_t plen = strlen(path);
    char *tmp = pb_xmalloc(plen + 16);
    snprintf(tmp, plen + 16, "%s.tmp", path);
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
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        remove(tmp);
        free(tmp);
        return pb_err_set(e, "cannot write '%s': %s", path, strerror(err));
    }
    free(tmp);
    return 0;
}
