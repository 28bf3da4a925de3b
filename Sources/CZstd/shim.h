#ifndef ARCUS_CZSTD_SHIM_H
#define ARCUS_CZSTD_SHIM_H

#include <zstd.h>

#endif
