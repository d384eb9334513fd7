//===- Rendezvous.h - Rank 0 publishes a secret in a file -------*- C++ -*-===//
//
// Without MPI, the processes of a GPU run find each other through one file
// on a file system they all see (--rendezvous PATH or TGC_RENDEZVOUS). The
// protocol:
//
//  1. Rank 0 removes PATH and PATH.abort (what a crashed run may have left),
//     then writes PATH atomically (temporary file in the same directory,
//     fsync, rename), so a reader sees a whole record or none:
//        tgc-rendezvous 1
//        run_id=<LaunchInfo::runId>
//        world_size=<WORLD_SIZE>
//        session=<128 random bits, hex>
//        host=<rank 0's host name>   pid=<its pid>   (for messages)
//        payload=<the NCCL unique id, hex>
//     (or, when rank 0 could not start, failed=<why> instead of a payload,
//     so the others fail at once rather than at their timeout).
//  2. Every other rank polls PATH (every 100 ms, open+read so NFS's
//     close-to-open consistency applies) until it holds a record of this
//     run: same world size, and the same run id when this process has one;
//     without a run id, a record whose mtime is no earlier than 30 s before
//     this process started (the slack absorbs launch skew between nodes and
//     clock skew between a node and the file server). Records that fail
//     the test are left alone and waited past: they are a previous run's.
//     After the timeout, a tgc::Error names the file and what was there.
//  3. Rank 0 removes PATH once every rank has joined (NCCL's init completed),
//     so a finished or failed run leaves nothing behind to be mistaken for
//     the next one's. Only a run killed during start-up leaves a record,
//     which the run id (or, failing that, its age) tells from a fresh one.
//  4. A rank that aborts writes PATH.abort (same atomic write) naming the
//     session and why; every rank's watchdog polls it, so one rank's abort
//     ends the others within a second or two even where no launcher would
//     kill them. The session token keeps an old notice from ending a new run.
//
// Give each launch its own run id where the launcher does not (TGC_RUN_ID=
// $(date +%s%N), say) or its own path, whenever runs restart within seconds.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_COMM_RENDEZVOUS_H
#define TGC_RUNTIME_COMM_RENDEZVOUS_H

#include <string>

namespace tgc {
namespace comm {

/// How much older than the process start a record without a run id may be.
constexpr double kRendezvousSlackSeconds = 30;

struct RendezvousOptions {
  std::string path;
  std::string runId; ///< LaunchInfo::runId ("" when the environment has none)
  int worldSize = 1;
  /// How long await() waits; 0 waits for ever.
  double timeoutSeconds = 300;
  /// Named in the timeout message ("TGC_NCCL_TIMEOUT").
  std::string timeoutVariable = "TGC_NCCL_TIMEOUT";
  /// Without a run id, only records written at or after this time (seconds
  /// since the epoch) count; processStartTime() - kRendezvousSlackSeconds by
  /// default (negative).
  double notBefore = -1;
};

class Rendezvous {
public:
  explicit Rendezvous(RendezvousOptions options);

  /// Rank 0: removes what a previous run left and publishes `payload` (any
  /// bytes). Throws tgc::Error naming the path.
  void publish(const std::string &payload);
  /// Rank 0, when it cannot start: publishes a record that makes the
  /// others' await() fail with `why` at once. Best effort, never throws.
  void publishFailure(const std::string &why) noexcept;
  /// The other ranks: waits for this run's record and returns its payload.
  /// Throws tgc::Error naming the path: missing directory, timeout (with
  /// what was found instead).
  std::string await();
  /// Rank 0, once every rank has read the record: removes it.
  void retire() noexcept;

  /// Writes the abort notice; best effort, never throws. Does nothing before
  /// publish()/await() succeeded (no session to name yet).
  void postAbort(int rank, const std::string &why) noexcept;
  /// Another rank's abort notice for this session ("rank 1: why"), or "".
  std::string pollAbort() const;

  const std::string &path() const { return options_.path; }
  const std::string &session() const { return session_; }
  std::string abortPath() const { return options_.path + ".abort"; }

  /// When this process started, in seconds since the epoch (from /proc).
  static double processStartTime();

private:
  void publishRecord(const std::string &lastLine);

  RendezvousOptions options_;
  std::string session_;
};

} // namespace comm
} // namespace tgc

#endif // TGC_RUNTIME_COMM_RENDEZVOUS_H
