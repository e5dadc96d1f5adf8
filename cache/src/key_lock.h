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

class FileLock {
public:
  // wait=false returns nullptr when another holder has the lock.
  static llvm::Expected<std::unique_ptr<FileLock>> acquire(llvm::StringRef path, bool wait);
  ~FileLock();
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;

private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
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
