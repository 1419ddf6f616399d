package savepoint

// dirSync is whether a directory can be fsynced. Windows flushes files
// only (FlushFileBuffers): a directory opened for reading refuses with
// "Access is denied", so every tree write would fail. Its renames are
// metadata that NTFS journals; there is no stronger barrier to ask for.
const dirSync = false
