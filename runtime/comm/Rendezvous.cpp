//===- Rendezvous.cpp - Rank 0 publishes a secret in a file -----*- C++ -*-===//

#include "runtime/comm/Rendezvous.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/Error.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <time.h>
#include <unistd.h>

namespace tgc {
namespace comm {

//===----------------------------------------------------------------------===//
// Records
//===----------------------------------------------------------------------===//

static std::string toHex(const std::string &bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    hex.push_back(digits[c >> 4]);
    hex.push_back(digits[c & 15]);
  }
  return hex;
}

static bool fromHex(const std::string &hex, std::string &bytes) {
  if (hex.size() % 2)
    return false;
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  bytes.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int high = nibble(hex[i]), low = nibble(hex[i + 1]);
    if (high < 0 || low < 0)
      return false;
    bytes.push_back(static_cast<char>(high << 4 | low));
  }
  return true;
}

/// One line per value: a newline in a value would end it early.
static std::string oneLine(std::string text) {
  for (char &c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  return text;
}

/// "key=value" lines after a first line that must equal `magic`; false when
/// the text is not such a record.
static bool parseRecord(const std::string &text, const std::string &magic,
                        std::map<std::string, std::string> &fields) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != magic)
    return false;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos)
      return false;
    fields[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return true;
}

/// The whole file and its mtime; false when it does not exist. Throws
/// tgc::Error for other failures (a directory in the way, no permission).
static bool readFile(const std::string &path, std::string &contents,
                     double &mtime) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return false;
    throwErrno(path, "cannot open the rendezvous file", errno);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int saved = errno;
    ::close(fd);
    throwErrno(path, "cannot stat the rendezvous file", saved);
  }
  mtime = st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9;
  contents.clear();
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    contents.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

static std::string hostName() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0)
    return "?";
  return name;
}

static double nowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

static std::string formatSeconds(const char *format, double seconds) {
  char text[64];
  std::snprintf(text, sizeof(text), format, seconds);
  return text;
}

//===----------------------------------------------------------------------===//
// Rendezvous
//===----------------------------------------------------------------------===//

double Rendezvous::processStartTime() {
  // Field 22 of /proc/self/stat (after the parenthesised command name, which
  // may hold spaces) is the start in clock ticks after boot; /proc/stat has
  // the boot time.
  static const double start = [] {
    std::ifstream statFile("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(statFile)),
                     std::istreambuf_iterator<char>());
    size_t close = text.rfind(')');
    std::ifstream bootFile("/proc/stat");
    std::string line;
    long long boot = -1;
    while (std::getline(bootFile, line))
      if (line.compare(0, 6, "btime ") == 0)
        boot = std::atoll(line.c_str() + 6);
    if (close != std::string::npos && boot > 0) {
      std::istringstream fields(text.substr(close + 2));
      std::string field;
      // Fields 3..21 come before starttime.
      for (int i = 3; i <= 21 && (fields >> field); ++i) {
      }
      unsigned long long ticks = 0;
      if (fields >> ticks)
        return static_cast<double>(boot) +
               static_cast<double>(ticks) / ::sysconf(_SC_CLK_TCK);
    }
    return nowSeconds();
  }();
  return start;
}

Rendezvous::Rendezvous(RendezvousOptions options)
    : options_(std::move(options)) {
  if (options_.notBefore < 0)
    options_.notBefore = processStartTime() - kRendezvousSlackSeconds;
  options_.runId = oneLine(options_.runId);
}

void Rendezvous::publish(const std::string &payload) {
  publishRecord("payload=" + toHex(payload));
}

void Rendezvous::publishFailure(const std::string &why) noexcept {
  try {
    publishRecord("failed=" + oneLine(why));
  } catch (...) {
  }
}

void Rendezvous::publishRecord(const std::string &lastLine) {
  std::random_device random;
  std::string token;
  for (int i = 0; i < 16; ++i)
    token.push_back(static_cast<char>(random() & 0xff));
  session_ = toHex(token);

  ::unlink(abortPath().c_str());
  ::unlink(options_.path.c_str());
  std::ostringstream record;
  record << "tgc-rendezvous 1\n"
         << "run_id=" << options_.runId << "\n"
         << "world_size=" << options_.worldSize << "\n"
         << "session=" << session_ << "\n"
         << "host=" << oneLine(hostName()) << "\n"
         << "pid=" << ::getpid() << "\n"
         << lastLine << "\n";
  try {
    writeFileAtomically(options_.path, record.str());
  } catch (const Error &e) {
    throw Error(std::string("rendezvous file: ") + e.what());
  }
}

std::string Rendezvous::await() {
  const std::string &path = options_.path;
  std::string dir = parentDirectory(path);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(path + ": the rendezvous file's directory " + dir +
                " does not exist (it must be on a file system every rank "
                "sees)");

  auto start = std::chrono::steady_clock::now();
  std::string rejected; // why the last record found was not this run's
  for (;;) {
    std::string text;
    double mtime = 0;
    if (readFile(path, text, mtime)) {
      std::map<std::string, std::string> fields;
      std::string payload;
      if (!parseRecord(text, "tgc-rendezvous 1", fields) ||
          !fields.count("session") ||
          (!fields.count("failed") && !fromHex(fields["payload"], payload))) {
        rejected = "it is not a tgc rendezvous record";
      } else if (fields["world_size"] != std::to_string(options_.worldSize)) {
        rejected = "it is for a world size of " + fields["world_size"] +
                   ", not " + std::to_string(options_.worldSize);
      } else if (!options_.runId.empty() &&
                 fields["run_id"] != options_.runId) {
        rejected = "its run id is '" + fields["run_id"] + "', not '" +
                   options_.runId + "'";
      } else if (options_.runId.empty() && mtime < options_.notBefore) {
        rejected =
            "it was written " +
            formatSeconds("%.0f s", options_.notBefore +
                                        kRendezvousSlackSeconds - mtime) +
            " before this process started (no run id: set TGC_RUN_ID "
            "to the same fresh value on every rank)";
      } else if (fields.count("failed")) {
        throw Error(path + ": rank 0 could not start: " + fields["failed"]);
      } else {
        session_ = fields["session"];
        return payload;
      }
    }
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (options_.timeoutSeconds > 0 && waited >= options_.timeoutSeconds)
      throw Error(
          path +
          ": rank 0 published no rendezvous record for this run within " +
          formatSeconds("%g s", options_.timeoutSeconds) + " (" +
          options_.timeoutVariable + "); " +
          (rejected.empty()
               ? std::string("the file does not exist: is rank 0 running, "
                             "with the same rendezvous path?")
               : "the file there is another run's: " + rejected));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void Rendezvous::retire() noexcept { ::unlink(options_.path.c_str()); }

void Rendezvous::postAbort(int rank, const std::string &why) noexcept {
  if (session_.empty())
    return;
  try {
    writeFileAtomically(abortPath(), "tgc-abort 1\nsession=" + session_ +
                                         "\nrank=" + std::to_string(rank) +
                                         "\nwhy=" + oneLine(why) + "\n");
  } catch (...) {
  }
}

std::string Rendezvous::pollAbort() const {
  if (session_.empty())
    return "";
  std::string text;
  double mtime = 0;
  try {
    if (!readFile(abortPath(), text, mtime))
      return "";
  } catch (const Error &) {
    return "";
  }
  std::map<std::string, std::string> fields;
  if (!parseRecord(text, "tgc-abort 1", fields) ||
      fields["session"] != session_)
    return "";
  return "rank " + fields["rank"] + ": " + fields["why"];
}

} // namespace comm
} // namespace tgc
