// One reader and one writer for every file the CLI reads or writes.
//
// Reading (ReadInput): a regular file, "-" (standard input), a pipe or a character device, read
// whole up to a size cap per kind of input. A directory, a missing file, an unreadable file, an
// input over its cap (e.g. /dev/zero) or a named FIFO that gets no data within the idle timeout
// is an error that names the path and the OS error. The caps are documented in docs/cli.md and
// can be raised with SetInputLimitOverride (the CLI's --max-input-size).
//
// Writing (OutputFile): "-" is standard output. A regular file (or a path that does not exist
// yet) is written to a temporary file in the same directory, every write checked, fsync'd and
// renamed over the target, so readers see the old or the new file, never half of one. A symlink
// is followed and its final target replaced, the link kept. An existing target that is not a
// regular file (character device, FIFO) is written through and never replaced; a socket or a
// directory is refused. On any failure the temporary file is removed and the error names the path
// and the OS error. Open() does all checks that can be made before the work starts (the directory
// exists and is writable, a FIFO has a reader), so a command finds an unusable output up front.
//
// Thread-compatible: one OutputFile per thread; the free functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace seedance::base {

// Kinds of input, each with its own default size cap.
enum class InputKind {
  kTrace,       // cluster and request traces (CSV, JSONL): 1 GiB
  kProfile,     // telemetry profiles (JSON): 1 GiB
  kDescriptor,  // cluster descriptors (YAML/JSON): 64 MiB
  kConfig,      // price tables and other small configuration (YAML): 16 MiB
  kModel,       // ONNX models and tensor files (protobuf, whose own limit is 2 GiB): 2 GiB
};

// The cap in bytes for `kind`, or the override when one is set.
int64_t InputLimit(InputKind kind);
// The name of `kind` used in messages ("trace", "profile", ...).
const char* InputKindName(InputKind kind);
// Replaces every kind's cap with `bytes` (> 0); 0 restores the defaults. Not thread-safe: call
// before any reads (the CLI does while parsing flags).
void SetInputLimitOverride(int64_t bytes);

// Seconds a named FIFO may stay silent (no writer, or no data) before the read fails.
inline constexpr double kFifoIdleTimeoutS = 10.0;

// Reads all of `path` ("-" = standard input). REQUIRES: path is not empty.
// Errors: kNotFound (no such file), kInvalidArgument (a directory, a socket, over the cap, a
// silent FIFO), kPermissionDenied, kDataLoss (a read error). Messages start with the path.
absl::StatusOr<std::string> ReadInput(const std::string& path, InputKind kind);

// What ReadBearerToken accepts beyond the common rules; the defaults are those of the server's
// own --token-file and of the Kubernetes tokens (--kube-token-file, --kube-in-cluster).
struct BearerTokenOptions {
  // The fewest characters the token may have (after `prefix` is removed): 16 by default; 1 where
  // the token is only passed on to whoever issued it (the client's --token-file, a Slurm JWT).
  size_t min_chars = 16;
  // Removed from the start of the first line when it is there ("SLURM_JWT=": `scontrol token`
  // prints SLURM_JWT=TOKEN); "" = none.
  std::string prefix;
};

// The most bytes a bearer token may have (an HTTP header line must hold it).
inline constexpr size_t kMaxBearerTokenBytes = 4096;

// The one reader of a bearer-token file. `path` is read with ReadInput (kConfig; "-" is standard
// input) and the token is its first line: surrounding spaces, tabs and '\r' (CRLF) removed, then
// `options.prefix` if the line starts with it; later lines are ignored. `flag` names the flag
// that gave the path, for messages. Errors: ReadInput's ("FLAG: PATH: ..."); kInvalidArgument
// ("FLAG PATH: ...") when the file is empty or blank, its first line is blank, or the token is
// empty after the prefix, holds a space or a control character, is longer than
// kMaxBearerTokenBytes or shorter than options.min_chars. The token is never in a message.
// REQUIRES: path is not empty.
absl::StatusOr<std::string> ReadBearerToken(const std::string& path, const char* flag,
                                            const BearerTokenOptions& options = {});

// An output being written; see the file comment. Commit() makes it visible; destroying an
// uncommitted OutputFile removes its temporary file and leaves the target as it was.
class OutputFile {
 public:
  // Opens `path` ("-" = standard output) for writing; see the file comment for what is checked.
  // Errors: kInvalidArgument (a directory, a socket, an empty path), kNotFound (the directory
  // does not exist), kPermissionDenied, kUnavailable (a FIFO with no reader), kInternal.
  static absl::StatusOr<std::unique_ptr<OutputFile>> Open(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Appends `data`; errors name the path and the OS error (e.g. ENOSPC on a full disk).
  absl::Status Write(std::string_view data);
  // Flushes, fsyncs (regular files) and renames into place. The OutputFile is done after it.
  absl::Status Commit();

  const std::string& path() const { return path_; }

 private:
  OutputFile() = default;
  std::string path_;         // as the user gave it, for messages
  std::string target_;       // the file replaced at Commit (symlinks resolved)
  std::string temp_;         // temporary file, or empty when writing through
  int fd_ = -1;
  bool is_stdout_ = false;
  bool done_ = false;
};

// Open + Write + Commit in one call.
absl::Status WriteOutput(const std::string& path, std::string_view data);

// Writes `data` to standard output (after flushing stdio) and checks every write.
absl::Status WriteStdout(std::string_view data);

// Refuses (kInvalidArgument, naming the flag) an output that is the same file as one of the
// inputs: same device and inode, or the same path. "-" and empty names are skipped. Call before
// any work. `flag` is the output's flag, used in the message.
struct NamedPath {
  std::string flag;  // e.g. "--output"
  std::string path;
};
absl::Status CheckOutputsDistinct(const std::vector<NamedPath>& inputs,
                                  const std::vector<NamedPath>& outputs);

}  // namespace seedance::base
