#pragma once
// The few POSIX file operations the cache needs, with the durability and permission rules it
// relies on, returning llvm::Error values that name the path.
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace fa4jit::cache {

llvm::Error errnoError(llvm::StringRef what, llvm::StringRef path, int err);

llvm::Expected<std::string> readWholeFile(llvm::StringRef path, uint64_t maxBytes);
// Creates (never replaces) a 0600 file and fsyncs it before returning.
llvm::Error writeFileDurably(llvm::StringRef path, llvm::StringRef bytes);
llvm::Error fsyncDirectory(llvm::StringRef path);
// mkdir -p with mode 0700 for every directory it creates; on failure it removes them again.
llvm::Error createPrivateDirectories(llvm::StringRef path);
// A folder inside the cache (a shard, tmp, locks) must be a directory itself, not a symbolic
// link: a link would let entries be written, renamed or removed outside the cache folder.
llvm::Error checkRealDirectory(llvm::StringRef path);
// A cache root must be a directory that nobody but its owner can write: anyone who can plant
// a cubin in it runs code in our processes (CUTLASS #3404). With requireOwnedByUs, it must also
// belong to this user.
llvm::Error checkPrivateDirectory(llvm::StringRef path, bool requireOwnedByUs);

// The system layer's trust rule: only what root or this user wrote is loaded. `root` and every
// path component below it down to `path` must be owned by root or this user and writable by
// nobody else, and no component below `root` may be a symbolic link (anyone who could swap one
// could plant a cubin). The error names the first component that breaks the rule.
llvm::Error checkTrustedPath(llvm::StringRef root, llvm::StringRef path);
// readWholeFile for a file under that rule: opened without following a symbolic link, and its
// owner and mode checked on the open descriptor (no window between check and read).
llvm::Expected<std::string> readTrustedFile(llvm::StringRef path, uint64_t maxBytes);

bool pathExists(llvm::StringRef path);
bool isDirectory(llvm::StringRef path);
// Names in a directory, without "." and ".."; empty when it cannot be read.
std::vector<std::string> listDirectory(llvm::StringRef path);
void removeTree(llvm::StringRef path);

using FileTime = std::chrono::system_clock::time_point;
// The modification time, or nullopt-like epoch when the file is missing.
FileTime modificationTime(llvm::StringRef path);
uint64_t fileSize(llvm::StringRef path);
llvm::Error setModificationTime(llvm::StringRef path, FileTime time);

} // namespace fa4jit::cache
