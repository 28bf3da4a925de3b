// A SQLite VFS shim that gathers a transaction's write-ahead-log writes into one write.
//
// SQLite writes each WAL frame as two calls (its 24-byte header, then the page), so a commit
// of n pages is 2n pwrite(2) calls, each through the file system's per-page write path. Here
// the calls that continue one another are gathered and written together when the commit
// frame (a frame header whose "database size after commit" field is not zero) has its page,
// before SQLite publishes the frames to readers in the WAL index. Nothing else changes:
// syncs, locks, the WAL index and every other file go straight to the default VFS, and
// anything that reads, syncs, truncates or sizes the log first writes what is gathered, so
// the file is never seen other than as the unix VFS would have left it.
//
// Frames a transaction spilled to the log before rolling back are written later than SQLite
// would have (at the next write elsewhere in the log, or at close), at the same place past the
// log's last commit, which SQLite ignores and overwrites.

#include "CArcusSQLiteWAL.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <string.h>

#define WAL_FRAME_HEADER_SIZE 24
// Under 128 KiB: the unix VFS writes at most 0x1ffff bytes a call (`seekAndWriteFd` masks the
// length to 17 bits), so a longer write comes out short and fails as SQLITE_FULL.
#define GATHER_LIMIT (64 * 1024)

typedef struct GatheringFile {
    sqlite3_file base;
    sqlite3_file *real;  // The default VFS's file, allocated right after this struct.
    int isLog;
    unsigned char *bytes;
    int count;
    sqlite3_int64 offset;  // Where `bytes` go in the file.
    int commitFrameNext;   // The last write was a commit frame's header: its page ends the commit.
} GatheringFile;

static sqlite3_vfs *realVFS;
static _Atomic int64_t requestedWrites, madeWrites;

static int writeGathered(GatheringFile *file) {
    if (file->count == 0) return SQLITE_OK;
    int count = file->count;
    file->count = 0;
    atomic_fetch_add_explicit(&madeWrites, 1, memory_order_relaxed);
    return file->real->pMethods->xWrite(file->real, file->bytes, count, file->offset);
}

static int gatheringClose(sqlite3_file *base) {
    GatheringFile *file = (GatheringFile *)base;
    int rc = writeGathered(file);
    int closed = file->real->pMethods->xClose(file->real);
    sqlite3_free(file->bytes);
    file->bytes = NULL;
    return rc != SQLITE_OK ? rc : closed;
}

static int gatheringRead(sqlite3_file *base, void *out, int amount, sqlite3_int64 offset) {
    GatheringFile *file = (GatheringFile *)base;
    int rc = writeGathered(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xRead(file->real, out, amount, offset);
}

static int gatheringWrite(sqlite3_file *base, const void *data, int amount, sqlite3_int64 offset) {
    GatheringFile *file = (GatheringFile *)base;
    if (!file->isLog) return file->real->pMethods->xWrite(file->real, data, amount, offset);
    atomic_fetch_add_explicit(&requestedWrites, 1, memory_order_relaxed);
    int rc;
    // Only a write that continues the gathered ones joins them.
    if (file->count > 0 && (offset != file->offset + file->count || file->count + amount > GATHER_LIMIT)) {
        if ((rc = writeGathered(file)) != SQLITE_OK) return rc;
    }
    if (file->bytes == NULL) file->bytes = sqlite3_malloc(GATHER_LIMIT);
    if (file->bytes == NULL || amount > GATHER_LIMIT) {
        atomic_fetch_add_explicit(&madeWrites, 1, memory_order_relaxed);
        file->commitFrameNext = 0;
        return file->real->pMethods->xWrite(file->real, data, amount, offset);
    }
    if (file->count == 0) file->offset = offset;
    memcpy(file->bytes + file->count, data, amount);
    file->count += amount;
    if (amount == WAL_FRAME_HEADER_SIZE) {
        // Bytes 4-7 of a frame header: the database's size in pages after a commit, else 0.
        const unsigned char *header = data;
        file->commitFrameNext = (header[4] | header[5] | header[6] | header[7]) != 0;
        return SQLITE_OK;
    }
    if (file->commitFrameNext) {
        file->commitFrameNext = 0;
        return writeGathered(file);
    }
    return SQLITE_OK;
}

static int gatheringTruncate(sqlite3_file *base, sqlite3_int64 size) {
    GatheringFile *file = (GatheringFile *)base;
    int rc = writeGathered(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xTruncate(file->real, size);
}

static int gatheringSync(sqlite3_file *base, int flags) {
    GatheringFile *file = (GatheringFile *)base;
    int rc = writeGathered(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xSync(file->real, flags);
}

static int gatheringFileSize(sqlite3_file *base, sqlite3_int64 *size) {
    GatheringFile *file = (GatheringFile *)base;
    int rc = writeGathered(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xFileSize(file->real, size);
}

static int gatheringLock(sqlite3_file *base, int lock) {
    GatheringFile *file = (GatheringFile *)base;
    return file->real->pMethods->xLock(file->real, lock);
}

static int gatheringUnlock(sqlite3_file *base, int lock) {
    GatheringFile *file = (GatheringFile *)base;
    return file->real->pMethods->xUnlock(file->real, lock);
}

static int gatheringCheckReservedLock(sqlite3_file *base, int *reserved) {
    GatheringFile *file = (GatheringFile *)base;
    return file->real->pMethods->xCheckReservedLock(file->real, reserved);
}

static int gatheringFileControl(sqlite3_file *base, int op, void *argument) {
    GatheringFile *file = (GatheringFile *)base;
    int rc = writeGathered(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xFileControl(file->real, op, argument);
}

static int gatheringSectorSize(sqlite3_file *base) {
    GatheringFile *file = (GatheringFile *)base;
    return file->real->pMethods->xSectorSize(file->real);
}

static int gatheringDeviceCharacteristics(sqlite3_file *base) {
    GatheringFile *file = (GatheringFile *)base;
    return file->real->pMethods->xDeviceCharacteristics(file->real);
}

static int gatheringShmMap(sqlite3_file *base, int region, int size, int extend, void volatile **out) {
    GatheringFile *file = (GatheringFile *)base;
    return file->real->pMethods->xShmMap(file->real, region, size, extend, out);
}

static int gatheringShmLock(sqlite3_file *base, int offset, int n, int flags) {
    GatheringFile *file = (GatheringFile *)base;
    return file->real->pMethods->xShmLock(file->real, offset, n, flags);
}

static void gatheringShmBarrier(sqlite3_file *base) {
    GatheringFile *file = (GatheringFile *)base;
    file->real->pMethods->xShmBarrier(file->real);
}

static int gatheringShmUnmap(sqlite3_file *base, int delete) {
    GatheringFile *file = (GatheringFile *)base;
    return file->real->pMethods->xShmUnmap(file->real, delete);
}

static int gatheringFetch(sqlite3_file *base, sqlite3_int64 offset, int amount, void **out) {
    GatheringFile *file = (GatheringFile *)base;
    int rc = writeGathered(file);
    if (rc != SQLITE_OK) return rc;
    return file->real->pMethods->xFetch(file->real, offset, amount, out);
}

static int gatheringUnfetch(sqlite3_file *base, sqlite3_int64 offset, void *page) {
    GatheringFile *file = (GatheringFile *)base;
    return file->real->pMethods->xUnfetch(file->real, offset, page);
}

// One table per version the real file may declare, so SQLite calls no method it lacks.
#define GATHERING_METHODS(version) { \
    version, gatheringClose, gatheringRead, gatheringWrite, gatheringTruncate, gatheringSync, gatheringFileSize, \
    gatheringLock, gatheringUnlock, gatheringCheckReservedLock, gatheringFileControl, gatheringSectorSize, \
    gatheringDeviceCharacteristics, gatheringShmMap, gatheringShmLock, gatheringShmBarrier, gatheringShmUnmap, \
    gatheringFetch, gatheringUnfetch }
static const sqlite3_io_methods gatheringMethods[4] = {
    GATHERING_METHODS(0), GATHERING_METHODS(1), GATHERING_METHODS(2), GATHERING_METHODS(3)
};

static int gatheringOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *base, int flags, int *outFlags) {
    (void)vfs;
    GatheringFile *file = (GatheringFile *)base;
    memset(file, 0, sizeof(*file));
    file->real = (sqlite3_file *)(file + 1);
    file->real->pMethods = NULL;
    int rc = realVFS->xOpen(realVFS, name, file->real, flags, outFlags);
    if (rc != SQLITE_OK || file->real->pMethods == NULL) {
        // SQLite calls no method of a file whose open failed (pMethods NULL), so a real file
        // left open is closed here.
        if (file->real->pMethods != NULL) file->real->pMethods->xClose(file->real);
        base->pMethods = NULL;
        return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
    }
    int version = file->real->pMethods->iVersion;
    base->pMethods = &gatheringMethods[version < 0 ? 0 : version > 3 ? 3 : version];
    file->isLog = (flags & SQLITE_OPEN_WAL) != 0;
    return SQLITE_OK;
}

static int gatheringDelete(sqlite3_vfs *vfs, const char *name, int syncDirectory) {
    (void)vfs;
    return realVFS->xDelete(realVFS, name, syncDirectory);
}

static int gatheringAccess(sqlite3_vfs *vfs, const char *name, int flags, int *result) {
    (void)vfs;
    return realVFS->xAccess(realVFS, name, flags, result);
}

static int gatheringFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return realVFS->xFullPathname(realVFS, name, size, out);
}

static void *gatheringDlOpen(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return realVFS->xDlOpen(realVFS, name);
}

static void gatheringDlError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    realVFS->xDlError(realVFS, size, out);
}

static void (*gatheringDlSym(sqlite3_vfs *vfs, void *library, const char *symbol))(void) {
    (void)vfs;
    return realVFS->xDlSym(realVFS, library, symbol);
}

static void gatheringDlClose(sqlite3_vfs *vfs, void *library) {
    (void)vfs;
    realVFS->xDlClose(realVFS, library);
}

static int gatheringRandomness(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return realVFS->xRandomness(realVFS, size, out);
}

static int gatheringSleep(sqlite3_vfs *vfs, int microseconds) {
    (void)vfs;
    return realVFS->xSleep(realVFS, microseconds);
}

static int gatheringCurrentTime(sqlite3_vfs *vfs, double *now) {
    (void)vfs;
    return realVFS->xCurrentTime(realVFS, now);
}

static int gatheringGetLastError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return realVFS->xGetLastError ? realVFS->xGetLastError(realVFS, size, out) : 0;
}

static int gatheringCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *now) {
    (void)vfs;
    return realVFS->xCurrentTimeInt64(realVFS, now);
}

static int gatheringSetSystemCall(sqlite3_vfs *vfs, const char *name, sqlite3_syscall_ptr call) {
    (void)vfs;
    return realVFS->xSetSystemCall(realVFS, name, call);
}

static sqlite3_syscall_ptr gatheringGetSystemCall(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return realVFS->xGetSystemCall(realVFS, name);
}

static const char *gatheringNextSystemCall(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return realVFS->xNextSystemCall(realVFS, name);
}

static sqlite3_vfs gatheringVFS;
static pthread_once_t registration = PTHREAD_ONCE_INIT;
static int registrationResult = SQLITE_OK;

static void registerOnce(void) {
    realVFS = sqlite3_vfs_find(NULL);
    if (realVFS == NULL) {
        registrationResult = SQLITE_ERROR;
        return;
    }
    // Every method the real VFS's version has is forwarded; a version-3 VFS (unix) has them all.
    gatheringVFS = (sqlite3_vfs){
        .iVersion = realVFS->iVersion < 3 ? realVFS->iVersion : 3,
        .szOsFile = (int)sizeof(GatheringFile) + realVFS->szOsFile,
        .mxPathname = realVFS->mxPathname,
        .zName = "arcus-wal-gathering",
        .xOpen = gatheringOpen,
        .xDelete = gatheringDelete,
        .xAccess = gatheringAccess,
        .xFullPathname = gatheringFullPathname,
        .xDlOpen = gatheringDlOpen,
        .xDlError = gatheringDlError,
        .xDlSym = gatheringDlSym,
        .xDlClose = gatheringDlClose,
        .xRandomness = gatheringRandomness,
        .xSleep = gatheringSleep,
        .xCurrentTime = gatheringCurrentTime,
        .xGetLastError = gatheringGetLastError,
        .xCurrentTimeInt64 = gatheringCurrentTimeInt64,
        .xSetSystemCall = gatheringSetSystemCall,
        .xGetSystemCall = gatheringGetSystemCall,
        .xNextSystemCall = gatheringNextSystemCall,
    };
    registrationResult = sqlite3_vfs_register(&gatheringVFS, 1);
}

int arcus_wal_write_buffer_register(void) {
    pthread_once(&registration, registerOnce);
    return registrationResult;
}

void arcus_wal_write_buffer_statistics(int64_t *requested, int64_t *writes) {
    *requested = atomic_load_explicit(&requestedWrites, memory_order_relaxed);
    *writes = atomic_load_explicit(&madeWrites, memory_order_relaxed);
}
