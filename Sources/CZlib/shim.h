#ifndef ARCUS_CZLIB_SHIM_H
#define ARCUS_CZLIB_SHIM_H

#include <zlib.h>

// deflateInit2 and inflateInit2 are macros, which Swift cannot call: these wrap them for raw
// deflate streams (no zlib header or checksum; frames carry their own CRC-32C).
static inline int arcus_deflate_init_raw(z_streamp stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}

static inline int arcus_inflate_init_raw(z_streamp stream) {
    return inflateInit2(stream, -15);
}

#endif
