//===- Launch.cpp - Who started this process, as which rank -----*- C++ -*-===//
//
// The precedence (Open MPI, hydra, torchrun, Slurm) puts the launcher that
// started this very process before the ones around it: mpirun inside a Slurm
// allocation leaves SLURM_* of the allocation in the environment, and
// torchrun under srun gets SLURM_PROCID of its node's agent, while
// OMPI_COMM_WORLD_* and RANK are the process's own.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Launch.h"

#include "runtime/core/Error.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

namespace tgc {
namespace comm {

static const char *lookup(const EnvLookup &env, const char *name) {
  const char *value = env ? env(name) : std::getenv(name);
  return value && *value ? value : nullptr;
}

/// A decimal integer in [minimum, INT_MAX], nothing else around it.
static int parseInt(const char *name, const char *text, int minimum,
                    const char *what) {
  const char *p = text;
  long long value = 0;
  bool digits = false;
  for (; *p >= '0' && *p <= '9'; ++p) {
    digits = true;
    value = value * 10 + (*p - '0');
    if (value > INT_MAX)
      break;
  }
  if (!digits || *p != '\0' || value > INT_MAX || value < minimum)
    throw Error(std::string(name) + "='" + text + "' is not " + what);
  return static_cast<int>(value);
}

namespace {
struct Variables {
  Launcher launcher;
  const char *rank, *size, *local;
};
} // namespace

// Where a variable set says world size but no rank (or the reverse), the
// launcher is half-configured: an error, not a single process.
static bool present(const EnvLookup &env, const Variables &vars) {
  return lookup(env, vars.rank) || lookup(env, vars.size);
}

static std::string runIdFrom(const EnvLookup &env) {
  if (const char *id = lookup(env, "TGC_RUN_ID"))
    return id;
  const char *elastic = lookup(env, "TORCHELASTIC_RUN_ID");
  if (elastic && std::string(elastic) != "none") {
    const char *restart = lookup(env, "TORCHELASTIC_RESTART_COUNT");
    return std::string("torchrun:") + elastic + "." + (restart ? restart : "0");
  }
  const char *job = lookup(env, "SLURM_JOB_ID");
  const char *step = lookup(env, "SLURM_STEP_ID");
  if (!step)
    step = lookup(env, "SLURM_STEPID");
  if (job && step) {
    std::string id = std::string("slurm:") + job + "." + step;
    if (const char *restart = lookup(env, "SLURM_RESTART_COUNT"))
      id += std::string(".") + restart;
    return id;
  }
  return "";
}

LaunchInfo detectLaunch(const EnvLookup &env) {
  LaunchInfo info;
  info.runId = runIdFrom(env);

  // Slurm's world size: the step's task count where srun says it (the
  // allocation's SLURM_NTASKS may be larger than this step).
  const char *slurmSize = lookup(env, "SLURM_STEP_NUM_TASKS")
                              ? "SLURM_STEP_NUM_TASKS"
                              : "SLURM_NTASKS";
  const Variables candidates[] = {
      {Launcher::OpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK"},
      {Launcher::Hydra, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {Launcher::Torchrun, "RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {Launcher::Slurm, "SLURM_PROCID", slurmSize, "SLURM_LOCALID"},
  };
  const Variables *chosen = nullptr;
  for (const Variables &vars : candidates) {
    if (!present(env, vars))
      continue;
    // Outside a job step (a batch script running the program directly),
    // SLURM_PROCID/SLURM_NTASKS describe the allocation, not this process.
    if (vars.launcher == Launcher::Slurm && !lookup(env, "SLURM_STEP_ID") &&
        !lookup(env, "SLURM_STEPID"))
      continue;
    chosen = &vars;
    break;
  }
  if (!chosen)
    return info;

  const char *rankText = lookup(env, chosen->rank);
  const char *sizeText = lookup(env, chosen->size);
  if (!sizeText)
    throw Error(std::string(chosen->rank) + "=" + rankText + " is set but " +
                chosen->size + " is not");
  if (!rankText)
    throw Error(std::string(chosen->size) + "=" + sizeText + " is set but " +
                chosen->rank + " is not");

  info.launcher = chosen->launcher;
  info.rankVar = chosen->rank;
  info.sizeVar = chosen->size;
  info.localVar = chosen->local;
  info.worldSize = parseInt(chosen->size, sizeText, 1, "a positive integer");
  info.rank = parseInt(chosen->rank, rankText, 0, "a non-negative integer");
  if (info.rank >= info.worldSize)
    throw Error(std::string(chosen->size) + "=" + sizeText + " but " +
                chosen->rank + "=" + rankText +
                ": the rank must be below the world size");
  if (const char *localText = lookup(env, chosen->local)) {
    info.localRank =
        parseInt(chosen->local, localText, 0, "a non-negative integer");
    if (info.localRank >= info.worldSize)
      throw Error(std::string(chosen->size) + "=" + sizeText + " but " +
                  chosen->local + "=" + localText +
                  ": the local rank must be below the world size");
  }
  return info;
}

const char *launcherName(Launcher launcher) {
  switch (launcher) {
  case Launcher::None:
    return "none";
  case Launcher::OpenMpi:
    return "mpirun";
  case Launcher::Hydra:
    return "mpiexec (hydra)";
  case Launcher::Torchrun:
    return "torchrun-style variables";
  case Launcher::Slurm:
    return "srun";
  }
  return "?";
}

double timeoutFromEnvironment(const char *name, double fallback,
                              const EnvLookup &env) {
  const char *text = lookup(env, name);
  if (!text)
    return fallback;
  char *end = nullptr;
  errno = 0;
  double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !std::isfinite(seconds) ||
      seconds < 0)
    throw Error(std::string(name) + "='" + text +
                "' is not a number of seconds (0 for no timeout)");
  return seconds;
}

} // namespace comm
} // namespace tgc
