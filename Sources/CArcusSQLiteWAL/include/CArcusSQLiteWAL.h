#ifndef C_ARCUS_SQLITE_WAL_H
#define C_ARCUS_SQLITE_WAL_H

#include <stdint.h>

/// Registers, once and as the process's default, a SQLite VFS that passes everything to the
/// default VFS except writes to write-ahead logs: those are gathered in memory while a
/// transaction writes its frames and written in one call when its commit frame is complete
/// (or sooner: before any read, sync, truncate or size of the log, or when 64 KiB are
/// gathered). Returns SQLITE_OK, or the error of the first attempt.
int arcus_wal_write_buffer_register(void);

/// What the VFS did since the process started: `requested`, the writes SQLite asked for on
/// write-ahead logs; `writes`, the writes made of them.
void arcus_wal_write_buffer_statistics(int64_t *requested, int64_t *writes);

#endif
