// The CLI's one reader and one writer (io.h).
#include "seedance/base/io.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "seedance/base/text.h"

namespace seedance::base {
namespace {

int64_t g_limit_override = 0;

std::string OsError(int err) { return std::generic_category().message(err); }

// The path as it may appear in a message: control characters and invalid UTF-8 escaped.
std::string Shown(const std::string& path) { return ForTerminal(path == "-" ? "-" : path); }

std::string FormatBytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30) && bytes % (int64_t{1} << 30) == 0) {
    return absl::StrCat(bytes >> 30, " GiB");
  }
  if (bytes >= (int64_t{1} << 20) && bytes % (int64_t{1} << 20) == 0) {
    return absl::StrCat(bytes >> 20, " MiB");
  }
  return absl::StrCat(bytes, " bytes");
}

absl::Status OpenError(const std::string& path, const char* verb, int err) {
  std::string msg = absl::StrCat(Shown(path), ": cannot ", verb, ": ", OsError(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
      return absl::InvalidArgumentError(msg);
    default:
      return absl::DataLossError(msg);
  }
}

// Reads fd to EOF, up to `limit` bytes. `idle_timeout_s` > 0 bounds the wait for each chunk.
absl::StatusOr<std::string> ReadAll(int fd, const std::string& path, InputKind kind,
                                    double idle_timeout_s) {
  const int64_t limit = InputLimit(kind);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    if (idle_timeout_s > 0) {
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(idle_timeout_s * 1000));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return OpenError(path, "read", errno);
      if (r == 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: no data for %g s (a FIFO with no writer?)", Shown(path), idle_timeout_s));
      }
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR)) continue;
    if (n < 0 && errno == EAGAIN) {
      if (idle_timeout_s > 0) continue;
      return OpenError(path, "read", errno);
    }
    if (n < 0) return OpenError(path, "read", errno);
    if (n == 0) break;
    if (static_cast<int64_t>(out.size()) + n > limit) {
      return absl::InvalidArgumentError(absl::StrCat(
          Shown(path), ": larger than the ", FormatBytes(limit), " limit for ",
          InputKindName(kind), " inputs (raise it with --max-input-size)"));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name an open descriptor, not a file
// to replace.
// The descriptor number named by /dev/stdin|stdout|stderr, /dev/fd/N or /proc/self/fd/N, or -1.
int DescriptorOf(const std::string& path) {
  if (path == "/dev/stdin") return 0;
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string p = prefix;
    if (path.rfind(p, 0) != 0 || path.size() == p.size() || path.size() > p.size() + 9) continue;
    int n = 0;
    for (size_t i = p.size(); i < path.size(); ++i) {
      if (path[i] < '0' || path[i] > '9') return -1;
      n = n * 10 + (path[i] - '0');
    }
    return n;
  }
  return -1;
}

bool IsDescriptorAlias(const std::string& path) {
  return path == "/dev/stdin" || path == "/dev/stdout" || path == "/dev/stderr" || path.rfind("/dev/fd/", 0) == 0 ||
         path.rfind("/proc/self/fd/", 0) == 0;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Follows `path` through symlinks to the file it finally names (which may not exist yet).
absl::StatusOr<std::string> ResolveSymlinks(const std::string& path) {
  std::string current = path;
  for (int depth = 0; depth < 40; ++depth) {
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return current;
    char buf[4096];
    const ssize_t n = ::readlink(current.c_str(), buf, sizeof buf - 1);
    if (n < 0) return OpenError(path, "resolve the symlink", errno);
    std::string link(buf, static_cast<size_t>(n));
    current = link.empty() || link[0] == '/' ? link : DirName(current) + "/" + link;
  }
  return OpenError(path, "resolve the symlink", ELOOP);
}

absl::Status WriteFd(int fd, std::string_view data, const std::string& shown) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    if (n < 0) return absl::DataLossError(absl::StrCat(shown, ": cannot write: ", OsError(errno)));
    if (n == 0) return absl::DataLossError(absl::StrCat(shown, ": cannot write: no progress"));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t InputLimit(InputKind kind) {
  if (g_limit_override > 0) return g_limit_override;
  switch (kind) {
    case InputKind::kTrace:
    case InputKind::kProfile:
      return int64_t{1} << 30;
    case InputKind::kDescriptor:
      return int64_t{64} << 20;
    case InputKind::kConfig:
      return int64_t{16} << 20;
    case InputKind::kModel:
      return int64_t{2} << 30;
  }
  return int64_t{16} << 20;
}

const char* InputKindName(InputKind kind) {
  switch (kind) {
    case InputKind::kTrace:
      return "trace";
    case InputKind::kProfile:
      return "profile";
    case InputKind::kDescriptor:
      return "cluster descriptor";
    case InputKind::kConfig:
      return "configuration";
    case InputKind::kModel:
      return "model";
  }
  return "input";
}

void SetInputLimitOverride(int64_t bytes) { g_limit_override = bytes > 0 ? bytes : 0; }

absl::StatusOr<std::string> ReadInput(const std::string& path, InputKind kind) {
  if (path.empty()) return absl::InvalidArgumentError("input path is empty");
  if (path == "-") return ReadAll(STDIN_FILENO, "standard input", kind, 0);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return OpenError(path, "open", errno);
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shown(path), ": is a directory, expected a ", InputKindName(kind), " file"));
  }
  if (S_ISSOCK(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shown(path), ": is a socket, expected a ", InputKindName(kind), " file"));
  }
  if (S_ISREG(st.st_mode) && st.st_size > InputLimit(kind)) {
    return absl::InvalidArgumentError(absl::StrCat(
        Shown(path), ": ", st.st_size, " bytes is larger than the ", FormatBytes(InputLimit(kind)),
        " limit for ", InputKindName(kind), " inputs (raise it with --max-input-size)"));
  }
  // A named FIFO may never get a writer: it is opened without blocking and read with an idle
  // timeout. A descriptor alias (/dev/stdin of a pipe) is the caller's own stream and blocks.
  const bool fifo = S_ISFIFO(st.st_mode) && !IsDescriptorAlias(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) return OpenError(path, "open", errno);
  absl::StatusOr<std::string> text = ReadAll(fd, path, kind, fifo ? kFifoIdleTimeoutS : 0);
  ::close(fd);
  return text;
}

absl::StatusOr<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("output path is empty");
  std::unique_ptr<OutputFile> out(new OutputFile());
  out->path_ = path;
  if (path == "-") {
    out->is_stdout_ = true;
    out->fd_ = STDOUT_FILENO;
    return out;
  }
  // The kernel resolves the path first: that handles /dev/stdout and /proc/self/fd/N, whose
  // link text ("pipe:[123]") names no file. A path that does not exist (yet) may still be a
  // dangling symlink, followed by hand to the file it will create.
  // /dev/stdout, /dev/fd/N and friends are the process's own descriptors: duplicated, never
  // reopened (reopening a pipe through /proc needs permissions the descriptor already has).
  if (const int alias = DescriptorOf(path); alias >= 0) {
    const int fd = ::fcntl(alias, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return OpenError(path, "write", errno);
    out->fd_ = fd;
    out->target_ = path;
    return out;
  }
  struct stat st;
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return OpenError(path, "write", errno);
  if (exists && S_ISREG(st.st_mode) && !IsDescriptorAlias(path)) {
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) return OpenError(path, "write", errno);
    out->target_ = resolved;
  } else if (exists) {
    out->target_ = path;  // written through below
  } else {
    absl::StatusOr<std::string> target = ResolveSymlinks(path);
    if (!target.ok()) return target.status();
    out->target_ = *target;
  }
  if (exists && (!S_ISREG(st.st_mode) || IsDescriptorAlias(path))) {
    if (S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(Shown(path), ": is a directory"));
    }
    if (S_ISSOCK(st.st_mode) || S_ISBLK(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(
          Shown(path), ": is a ", S_ISSOCK(st.st_mode) ? "socket" : "block device",
          "; refusing to write to it (give a regular file or -)"));
    }
    // Character devices, FIFOs and descriptor aliases are written through, never replaced; a
    // descriptor alias of a regular file (> file, >> file) is appended to, as the shell left it.
    const bool fifo = S_ISFIFO(st.st_mode);
    const int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | (fifo ? O_NONBLOCK : 0) |
                      (S_ISREG(st.st_mode) ? O_APPEND : 0);
    const int fd = ::open(path.c_str(), flags);
    if (fd < 0 && fifo && errno == ENXIO) {
      return absl::UnavailableError(
          absl::StrCat(Shown(path), ": cannot write: no process is reading this FIFO"));
    }
    if (fd < 0) return OpenError(path, "write", errno);
    if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    out->fd_ = fd;
    return out;
  }
  if (exists && ::access(out->target_.c_str(), W_OK) != 0) return OpenError(path, "write", errno);
  const std::string dir = DirName(out->target_);
  struct stat dst;
  if (::stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    return absl::NotFoundError(
        absl::StrCat(Shown(path), ": cannot write: directory ", Shown(dir), " does not exist"));
  }
  // The temporary name stays short enough for a target name at NAME_MAX.
  std::string temp = dir + "/." + BaseName(out->target_).substr(0, 100) + ".seedance-XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return OpenError(path, "write", errno);
  mode_t mode;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd, mode);
  out->temp_ = temp;
  out->fd_ = fd;
  return out;
}

OutputFile::~OutputFile() {
  if (done_) return;
  if (!is_stdout_ && fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

absl::Status OutputFile::Write(std::string_view data) {
  if (done_) return absl::FailedPreconditionError(absl::StrCat(Shown(path_), ": already closed"));
  if (is_stdout_) return WriteStdout(data);
  if (temp_.empty()) std::fflush(stdout);  // a descriptor alias may share stdout's stream
  absl::Status s = WriteFd(fd_, data, Shown(path_));
  if (!s.ok()) {
    ::close(fd_);
    if (!temp_.empty()) ::unlink(temp_.c_str());
    done_ = true;
  }
  return s;
}

absl::Status OutputFile::Commit() {
  if (done_) return absl::FailedPreconditionError(absl::StrCat(Shown(path_), ": already closed"));
  done_ = true;
  if (is_stdout_) {
    if (std::fflush(stdout) != 0) {
      return absl::DataLossError(absl::StrCat("standard output: cannot write: ", OsError(errno)));
    }
    return absl::OkStatus();
  }
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd_);
    if (!temp_.empty()) ::unlink(temp_.c_str());
    return absl::DataLossError(absl::StrCat(Shown(path_), ": cannot ", what, ": ", OsError(err)));
  };
  if (temp_.empty()) {
    if (::close(fd_) != 0) return absl::DataLossError(absl::StrCat(Shown(path_), ": cannot write: ", OsError(errno)));
    return absl::OkStatus();
  }
  if (::fsync(fd_) != 0) return fail("write");
  if (::close(fd_) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    return absl::DataLossError(absl::StrCat(Shown(path_), ": cannot write: ", OsError(err)));
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    return absl::DataLossError(absl::StrCat(Shown(path_), ": cannot rename into place: ", OsError(err)));
  }
  const int dfd = ::open(DirName(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return absl::OkStatus();
}

absl::Status WriteOutput(const std::string& path, std::string_view data) {
  absl::StatusOr<std::unique_ptr<OutputFile>> out = OutputFile::Open(path);
  if (!out.ok()) return out.status();
  if (absl::Status s = (*out)->Write(data); !s.ok()) return s;
  return (*out)->Commit();
}

absl::Status WriteStdout(std::string_view data) {
  if (std::fflush(stdout) != 0) {
    return absl::DataLossError(absl::StrCat("standard output: cannot write: ", OsError(errno)));
  }
  return WriteFd(STDOUT_FILENO, data, "standard output");
}

absl::Status CheckOutputsDistinct(const std::vector<NamedPath>& inputs,
                                  const std::vector<NamedPath>& outputs) {
  struct Id {
    bool exists = false;
    bool regular = false;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  auto id_of = [](const std::string& p) {
    Id id;
    struct stat st;
    if (!p.empty() && p != "-" && ::stat(p.c_str(), &st) == 0) {
      id.exists = true;
      id.regular = S_ISREG(st.st_mode);
      id.dev = st.st_dev;
      id.ino = st.st_ino;
    }
    return id;
  };
  auto same = [](const Id& a, const Id& b) {
    return a.exists && b.exists && a.dev == b.dev && a.ino == b.ino;
  };
  for (size_t o = 0; o < outputs.size(); ++o) {
    const NamedPath& out = outputs[o];
    if (out.path.empty() || out.path == "-") continue;
    const Id oid = id_of(out.path);
    for (const NamedPath& in : inputs) {
      if (in.path.empty() || in.path == "-") continue;
      if (same(oid, id_of(in.path)) || in.path == out.path) {
        return absl::InvalidArgumentError(absl::StrCat(
            out.flag, " ", Shown(out.path), ": is the same file as the input given to ", in.flag,
            "; refusing to overwrite an input"));
      }
    }
    for (size_t p = 0; p < o; ++p) {
      const NamedPath& prev = outputs[p];
      if (prev.path.empty() || prev.path == "-") continue;
      const Id pid = id_of(prev.path);
      if ((oid.regular && same(oid, pid)) || (!oid.exists && prev.path == out.path)) {
        return absl::InvalidArgumentError(absl::StrCat(out.flag, " ", Shown(out.path),
                                                       ": is also the output of ", prev.flag));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadBearerToken(const std::string& path, const char* flag,
                                            const BearerTokenOptions& options) {
  absl::StatusOr<std::string> text = ReadInput(path, InputKind::kConfig);
  if (!text.ok()) {
    // ReadInput names the path and the OS error, never the contents.
    return absl::Status(text.status().code(), absl::StrCat(flag, ": ", text.status().message()));
  }
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", ForTerminal(path), ": ", why));
  };
  const std::string expected = options.prefix.empty() ? ""
                                                      : absl::StrCat(" (expected ", options.prefix,
                                                                     "TOKEN or the bare token)");
  if (absl::StripAsciiWhitespace(*text).empty()) {
    return refuse(absl::StrCat("no token: the file is empty", expected));
  }
  absl::string_view t = *text;
  t = absl::StripAsciiWhitespace(t.substr(0, t.find('\n')));
  if (t.empty()) {
    return refuse(
        "no token on the first line (it is blank); the token must be the file's first line");
  }
  if (!options.prefix.empty() && absl::ConsumePrefix(&t, options.prefix) && t.empty()) {
    return refuse(absl::StrCat("no token after ", options.prefix));
  }
  for (char c : t) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return refuse("the first line must hold one token (no spaces or control characters inside)");
    }
  }
  if (t.size() > kMaxBearerTokenBytes) {
    return refuse(absl::StrCat("the token is longer than ", kMaxBearerTokenBytes, " bytes"));
  }
  if (t.size() < options.min_chars) {
    return refuse(absl::StrCat("the token must be at least ", options.min_chars,
                               " characters on the file's first line"));
  }
  return std::string(t);
}

}  // namespace seedance::base
