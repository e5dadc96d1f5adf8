#include "fs_util.h"

#include <climits>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fa4jit::cache {
namespace {

// Closes a descriptor on every path out of a function.
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

int openRetry(const std::string &path, int flags, mode_t mode = 0) {
  int fd;
  do
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  while (fd < 0 && errno == EINTR);
  return fd;
}

} // namespace

llvm::Error errnoError(llvm::StringRef what, llvm::StringRef path, int err) {
  return llvm::createStringError(std::error_code(err, std::generic_category()), "%s '%s': %s", what.str().c_str(),
                                 path.str().c_str(), std::strerror(err));
}

namespace {

// Owned by root or this user, writable by nobody else.
llvm::Error checkTrustedOwner(const struct stat &st, llvm::StringRef path) {
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return llvm::createStringError(std::errc::permission_denied,
                                   "not trusted: '%s' belongs to uid %u, neither root nor this user (uid %u)",
                                   path.str().c_str(), unsigned(st.st_uid), unsigned(::geteuid()));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return llvm::createStringError(std::errc::permission_denied,
                                   "not trusted: '%s' is writable by group or others (mode %o)", path.str().c_str(),
                                   unsigned(st.st_mode & 07777));
  return llvm::Error::success();
}

llvm::Expected<std::string> readRegularFile(llvm::StringRef path, uint64_t maxBytes, bool trusted) {
  // Non-blocking, so that a FIFO (or a device) in place of a file cannot hang the open; only a
  // regular file is read.
  Fd f(openRetry(path.str(), O_RDONLY | O_NONBLOCK | (trusted ? O_NOFOLLOW : 0)));
  if (f.fd < 0) {
    if (trusted && errno == ELOOP)
      return llvm::createStringError(std::errc::permission_denied, "not trusted: '%s' is a symbolic link",
                                     path.str().c_str());
    return errnoError("cannot open", path, errno);
  }
  struct stat st;
  if (::fstat(f.fd, &st) != 0)
    return errnoError("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode))
    return llvm::createStringError(std::errc::invalid_argument, "'%s' is not a regular file", path.str().c_str());
  if (trusted)
    if (llvm::Error e = checkTrustedOwner(st, path))
      return e;
  std::string data;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(f.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errnoError("cannot read", path, errno);
    if (n == 0)
      return data;
    if (data.size() + uint64_t(n) > maxBytes)
      return llvm::createStringError(std::errc::file_too_large, "'%s' is larger than %llu bytes", path.str().c_str(),
                                     static_cast<unsigned long long>(maxBytes));
    data.append(buffer, size_t(n));
  }
}

} // namespace

llvm::Expected<std::string> readWholeFile(llvm::StringRef path, uint64_t maxBytes) {
  return readRegularFile(path, maxBytes, /*trusted=*/false);
}

llvm::Expected<std::string> readTrustedFile(llvm::StringRef path, uint64_t maxBytes) {
  return readRegularFile(path, maxBytes, /*trusted=*/true);
}

llvm::Error checkTrustedPath(llvm::StringRef root, llvm::StringRef path) {
  struct stat st;
  if (::stat(root.str().c_str(), &st) != 0)
    return errnoError("cannot inspect", root, errno);
  if (llvm::Error e = checkTrustedOwner(st, root))
    return e;
  llvm::StringRef rest = path;
  if (!rest.consume_front(root) || (!rest.empty() && !rest.startswith("/")))
    return llvm::createStringError(std::errc::invalid_argument, "not trusted: '%s' is not under '%s'",
                                   path.str().c_str(), root.str().c_str());
  std::string at = root.str();
  while (!rest.empty()) {
    llvm::StringRef part;
    std::tie(part, rest) = rest.ltrim('/').split('/');
    if (part.empty())
      break;
    if (part == "..")
      return llvm::createStringError(std::errc::invalid_argument, "not trusted: '%s' leaves '%s'", path.str().c_str(),
                                     root.str().c_str());
    at += "/" + part.str();
    if (::lstat(at.c_str(), &st) != 0)
      return errnoError("cannot inspect", at, errno);
    if (S_ISLNK(st.st_mode))
      return llvm::createStringError(std::errc::permission_denied, "not trusted: '%s' is a symbolic link", at.c_str());
    if (llvm::Error e = checkTrustedOwner(st, at))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error writeFileDurably(llvm::StringRef path, llvm::StringRef bytes) {
  Fd f(openRetry(path.str(), O_WRONLY | O_CREAT | O_EXCL, 0600));
  if (f.fd < 0)
    return errnoError("cannot create", path, errno);
  const char *p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(f.fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errnoError("cannot write", path, errno);
    p += n;
    left -= size_t(n);
  }
  if (::fsync(f.fd) != 0)
    return errnoError("cannot fsync", path, errno);
  int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) // NFS reports deferred write errors here
    return errnoError("cannot close", path, errno);
  return llvm::Error::success();
}

llvm::Error fsyncDirectory(llvm::StringRef path) {
  Fd f(openRetry(path.str(), O_RDONLY | O_DIRECTORY));
  if (f.fd < 0)
    return errnoError("cannot open directory", path, errno);
  if (::fsync(f.fd) != 0 && errno != EINVAL) // some file systems cannot fsync directories
    return errnoError("cannot fsync directory", path, errno);
  return llvm::Error::success();
}

namespace {
// createPrivateDirectories, noting each directory it made in `created` (parents first).
llvm::Error createPrivateDirectoriesNoting(llvm::StringRef path, std::vector<std::string> &created) {
  if (path.empty() || isDirectory(path))
    return llvm::Error::success();
  llvm::StringRef parent = path.rtrim('/').rsplit('/').first;
  if (!parent.empty() && parent != path)
    if (llvm::Error e = createPrivateDirectoriesNoting(parent, created))
      return e;
  if (::mkdir(path.str().c_str(), 0700) != 0) {
    if (errno != EEXIST)
      return errnoError("cannot create directory", path, errno);
  } else {
    created.push_back(path.str());
  }
  if (!isDirectory(path))
    return errnoError("cannot create directory", path, ENOTDIR);
  return llvm::Error::success();
}
} // namespace

llvm::Error createPrivateDirectories(llvm::StringRef path) {
  // A path the system cannot name is refused before anything is made; any other failure removes
  // what this call made, so a refused folder leaves nothing behind.
  if (path.size() >= PATH_MAX)
    return llvm::createStringError(std::errc::filename_too_long,
                                   "cannot create directory '%s...': its path is %zu bytes, the system's limit is %d",
                                   path.substr(0, 64).str().c_str(), path.size(), PATH_MAX - 1);
  std::vector<std::string> created;
  llvm::Error e = createPrivateDirectoriesNoting(path, created);
  if (e)
    for (auto it = created.rbegin(); it != created.rend(); ++it)
      ::rmdir(it->c_str());
  return e;
}

llvm::Error checkRealDirectory(llvm::StringRef path) {
  struct stat st;
  if (::lstat(path.str().c_str(), &st) != 0)
    return errnoError("cannot inspect cache directory", path, errno);
  if (S_ISLNK(st.st_mode))
    return llvm::createStringError(std::errc::operation_not_permitted,
                                   "refusing '%s': a symbolic link inside the cache (entries are written and removed "
                                   "only under the cache folder); remove it",
                                   path.str().c_str());
  if (!S_ISDIR(st.st_mode))
    return errnoError("cache path is not a directory:", path, ENOTDIR);
  return llvm::Error::success();
}

llvm::Error checkPrivateDirectory(llvm::StringRef path, bool requireOwnedByUs) {
  struct stat st;
  if (::stat(path.str().c_str(), &st) != 0)
    return errnoError("cannot inspect cache directory", path, errno);
  if (!S_ISDIR(st.st_mode))
    return errnoError("cache path is not a directory:", path, ENOTDIR);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return llvm::createStringError(std::errc::permission_denied,
                                   "refusing cache directory '%s': it is writable by group or others (mode %o); "
                                   "run 'chmod go-w %s' or choose another directory",
                                   path.str().c_str(), unsigned(st.st_mode & 07777), path.str().c_str());
  if (requireOwnedByUs && st.st_uid != ::geteuid())
    return llvm::createStringError(std::errc::permission_denied,
                                   "refusing cache directory '%s': it belongs to uid %u, not to this user (uid %u)",
                                   path.str().c_str(), unsigned(st.st_uid), unsigned(::geteuid()));
  return llvm::Error::success();
}

bool pathExists(llvm::StringRef path) {
  struct stat st;
  return ::lstat(path.str().c_str(), &st) == 0;
}

bool isDirectory(llvm::StringRef path) {
  struct stat st;
  return ::stat(path.str().c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> listDirectory(llvm::StringRef path) {
  std::vector<std::string> names;
  DIR *dir = ::opendir(path.str().c_str());
  if (!dir)
    return names;
  while (struct dirent *d = ::readdir(dir)) {
    llvm::StringRef name(d->d_name);
    if (name != "." && name != "..")
      names.push_back(name.str());
  }
  ::closedir(dir);
  return names;
}

void removeTree(llvm::StringRef path) {
  struct stat st;
  if (::lstat(path.str().c_str(), &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    for (const std::string &name : listDirectory(path))
      removeTree((path + "/" + name).str());
    ::rmdir(path.str().c_str());
  } else {
    ::unlink(path.str().c_str());
  }
}

FileTime modificationTime(llvm::StringRef path) {
  struct stat st;
  if (::stat(path.str().c_str(), &st) != 0)
    return FileTime();
  auto since = std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
  return FileTime(std::chrono::duration_cast<FileTime::duration>(since));
}

uint64_t fileSize(llvm::StringRef path) {
  struct stat st;
  return ::stat(path.str().c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

llvm::Error setModificationTime(llvm::StringRef path, FileTime time) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = ns / 1000000000;
  times[0].tv_nsec = times[1].tv_nsec = ns % 1000000000;
  if (::utimensat(AT_FDCWD, path.str().c_str(), times, 0) != 0)
    return errnoError("cannot set the time of", path, errno);
  return llvm::Error::success();
}

} // namespace fa4jit::cache
