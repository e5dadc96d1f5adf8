#include "key_lock.h"

#include "fs_util.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace fa4jit::cache {

llvm::Expected<std::unique_ptr<FileLock>> FileLock::acquire(llvm::StringRef path, bool wait) {
  int fd;
  do
    fd = ::open(path.str().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
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
  return std::unique_ptr<FileLock>(new FileLock(fd));
}

FileLock::~FileLock() { ::close(fd_); } // closing the only descriptor releases the flock

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
