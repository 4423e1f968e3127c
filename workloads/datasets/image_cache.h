/* workloads/datasets/image_cache.h — decoded images kept in a uint8 cache file, so a
 * dataset of JPEGs is decoded once and mapped by later runs (semantics §1.6). The file is
 * a 64-byte header (magic "PBU8IMG", version, the source tree's fingerprint, the split's
 * sample count, the samples held, their shape, the split's name, the CRC-32 of the
 * pixels) and the pixels
 * [n, c, h, w] of the split's first n samples. It lives beside the data
 * (DIR/pipebench-SPLIT.u8cache) or, where that folder cannot be written, in the cache
 * folder ($XDG_CACHE_HOME/pipebench or ~/.cache/pipebench), and is written atomically. A
 * header that does not match the source (another fingerprint, count or shape, or an
 * older version) is stale: the loader decodes again and replaces it. One whose pixels do
 * not match their checksum is damaged, and refused with what to do. */
#ifndef PB_IMAGE_CACHE_H
#define PB_IMAGE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/base/err.h"

#define PB_IMAGE_CACHE_VERSION 2u
#define PB_IMAGE_CACHE_HEADER 64

/* Which cache: the dataset, its folder, the split and what its pixels depend on. */
struct pb_image_cache_id {
    const char *dataset;    /* "tiny-imagenet" */
    const char *dir;        /* the dataset's folder */
    const char *split;      /* "train" or "val" (at most 15 characters) */
    uint64_t fingerprint;   /* of the source files, in sample order */
    int n_total;            /* samples of the split */
    int c, h, w;
};

/* A cache mapped read-only: the pixels of its first n samples. */
struct pb_image_cache_map {
    const uint8_t *pix;     /* [n, c, h, w] */
    int n;
    void *map;
    size_t len;
    char *path;
};

/* The cache path beside the data (beside true) or in the cache folder; free() it. NULL
 * for the cache folder when neither $XDG_CACHE_HOME nor a home folder is known. */
char *pb_image_cache_path(const struct pb_image_cache_id *id, bool beside);

/* Maps the valid cache of id that holds the most samples, beside the data or in the
 * cache folder; out->n is 0 (and nothing is mapped) when neither is valid. -1 with a
 * message (delete it and let the next run rebuild it) when one is damaged. */
int pb_image_cache_find(const struct pb_image_cache_id *id, struct pb_image_cache_map *out,
                        struct pb_err *e);
/* Unmaps and zeroes m; safe on a zeroed one. */
void pb_image_cache_unmap(struct pb_image_cache_map *m);

/* Writes pix [n, c, h, w] as id's cache beside the data, else in the cache folder
 * (created when missing); returns the path written (free() it), or NULL with a
 * message naming both places when neither can be written. */
char *pb_image_cache_write(const struct pb_image_cache_id *id, const uint8_t *pix, int n,
                           struct pb_err *e);

/* 64-bit FNV-1a of bytes, continuing from h (start with PB_FNV_OFFSET). */
#define PB_FNV_OFFSET 0xcbf29ce484222325ull
uint64_t pb_fnv1a(uint64_t h, const void *bytes, size_t n);

#endif
