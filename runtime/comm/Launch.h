//===- Launch.h - Who started this process, as which rank -------*- C++ -*-===//
//
// Reads the variables launchers set (see Comm.h for the order) into a
// LaunchInfo, validating them: a malformed or inconsistent value is a
// tgc::Error that names the variable and its value. Pure functions of an
// environment lookup, so they are tested without launching anything.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_COMM_LAUNCH_H
#define TGC_RUNTIME_COMM_LAUNCH_H

#include <functional>
#include <string>

namespace tgc {
namespace comm {

enum class Launcher { None, OpenMpi, Hydra, Torchrun, Slurm };

struct LaunchInfo {
  Launcher launcher = Launcher::None;
  int rank = 0;
  int worldSize = 1;
  /// -1 when the launcher does not say (then MPI or the device count decides).
  int localRank = -1;
  /// The variables the values came from, for messages ("RANK", "WORLD_SIZE").
  std::string rankVar, sizeVar, localVar;
  /// Identifies this launch among runs sharing a rendezvous file ("" when
  /// the environment has none): TGC_RUN_ID, else "torchrun:<id>.<restart>"
  /// from TORCHELASTIC_RUN_ID (unless "none") and
  /// TORCHELASTIC_RESTART_COUNT, else "slurm:<job>.<step>[.<restart>]".
  std::string runId;

  /// Whether an MPI launcher (mpirun, hydra, srun) started the process, so
  /// MPI_Init can find its peers.
  bool mpiLaunch() const {
    return launcher == Launcher::OpenMpi || launcher == Launcher::Hydra ||
           launcher == Launcher::Slurm;
  }
};

using EnvLookup = std::function<const char *(const char *)>;

/// The launch this process belongs to, from `env` (getenv by default).
/// Throws tgc::Error naming the variable at fault.
LaunchInfo detectLaunch(const EnvLookup &env = nullptr);

/// "mpirun", "mpiexec (hydra)", "torchrun-style variables", "srun", "none".
const char *launcherName(Launcher launcher);

/// A timeout in seconds from variable `name` (`fallback` when unset); 0
/// means none. Throws tgc::Error naming the variable when it is not a
/// non-negative number.
double timeoutFromEnvironment(const char *name, double fallback,
                              const EnvLookup &env = nullptr);

} // namespace comm
} // namespace tgc

#endif // TGC_RUNTIME_COMM_LAUNCH_H
