#include "key_lock.h"

#include "fs_util.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fa4jit::cache {

llvm::Expected<std::unique_ptr<FileLock>> FileLock::acquire(llvm::StringRef path, bool wait) {
  const std::string p = path.str();
  for (;;) {
    int fd;
    do
      fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
      return errnoError("cannot open lock file", path, errno);
    int rc;
    do
      rc = ::flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      int err = errno;
      ::close(fd);
      if (!wait && err == EWOULDBLOCK)
        return nullptr;
      return errnoError("cannot lock", path, err);
    }
    // Locked; but if the holder before us unlinked the file, the path names another inode (or
    // none) and whoever opens it now would not wait for us: start over on the path's file.
    struct stat held {}, named {};
    if (::fstat(fd, &held) != 0) {
      int err = errno;
      ::close(fd);
      return errnoError("cannot stat lock file", path, err);
    }
    const bool named_ok = ::stat(p.c_str(), &named) == 0;
    const int stat_err = errno;
    if (named_ok && named.st_dev == held.st_dev && named.st_ino == held.st_ino)
      return std::unique_ptr<FileLock>(new FileLock(fd, p));
    ::close(fd);
    if (!named_ok && stat_err != ENOENT)
      return errnoError("cannot stat lock file", path, stat_err);
  }
}

FileLock::~FileLock() { ::close(fd_); } // closing the only descriptor releases the flock

void FileLock::removeFile() { ::unlink(path_.c_str()); } // best effort: a stale lock file only takes space

KeyMutexes::Guard::Guard(KeyMutexes &owner, std::string key) : owner_(owner), key_(std::move(key)) {
  {
    std::lock_guard<std::mutex> table(owner_.tableMutex_);
    auto &slot = owner_.slots_[key_];
    if (!slot)
      slot = std::make_unique<Slot>();
    ++slot->users;
    mutex_ = &slot->mutex;
  }
  mutex_->lock();
}

KeyMutexes::Guard::~Guard() {
  mutex_->unlock();
  std::lock_guard<std::mutex> table(owner_.tableMutex_);
  auto it = owner_.slots_.find(key_);
  if (--it->second->users == 0)
    owner_.slots_.erase(it);
}

} // namespace fa4jit::cache
