#pragma once
// Per-key mutual exclusion, between processes (flock on <root>/locks/<key>.lock) and between
// threads of this process. flock, not fcntl locks: fcntl locks belong to the process, so two
// threads would both "hold" one, and closing any descriptor of the file drops them. The kernel
// releases a flock when its holder dies, so a killed compiler never wedges the others.
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace fa4jit::cache {

// A lock file may be unlinked by its holder (the prune of an entry removes the entry's lock file
// too, so that locks/ does not grow forever). A waiter that then gets the flock holds it on an
// inode no longer at the path, which a newcomer would not contend for: acquire() therefore checks,
// once locked, that the path still names the inode it locked, and starts over if not.
class FileLock {
public:
  // wait=false returns nullptr when another holder has the lock.
  static llvm::Expected<std::unique_ptr<FileLock>> acquire(llvm::StringRef path, bool wait);
  ~FileLock();
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  // Unlinks the lock file, still holding it: the last act of a holder whose key is gone.
  void removeFile();

private:
  FileLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// One mutex per key, created on demand and dropped when nobody holds or waits for it.
class KeyMutexes {
public:
  class Guard {
  public:
    Guard(KeyMutexes &owner, std::string key);
    ~Guard();
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;

  private:
    KeyMutexes &owner_;
    std::string key_;
    std::mutex *mutex_;
  };

private:
  struct Slot {
    std::mutex mutex;
    int users = 0;
  };
  std::mutex tableMutex_;
  std::map<std::string, std::unique_ptr<Slot>> slots_;
};

} // namespace fa4jit::cache
