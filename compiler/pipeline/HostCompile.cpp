//===- HostCompile.cpp - Emitted source to a training executable --*- C++ -*-===//

#include "compiler/pipeline/HostCompile.h"

#include "compiler/pipeline/BuildCache.h"
#include "compiler/pipeline/Config.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <cerrno>
#include <cstdlib>
#include <deque>
#include <functional>
#include <optional>
#include <thread>

#include <sys/wait.h>

using namespace mlir;
using llvm::SmallVector;
using llvm::StringRef;
using namespace mlir::tg;

static std::string fromEnv(const char *name, const char *fallback) {
  const char *value = std::getenv(name);
  return value && *value ? value : fallback;
}

/// The folder above the one holding this binary: a build tree (build/bin/tgc)
/// or an install prefix (prefix/bin/tgc) alike.
static std::string installPrefix() {
  static const std::string prefix = [] {
    static int anchor;
    SmallString<256> dir(llvm::sys::fs::getMainExecutable(nullptr, &anchor));
    llvm::sys::path::remove_filename(dir);
    llvm::sys::path::remove_filename(dir);
    return dir.str().str();
  }();
  return prefix;
}

std::string mlir::tg::runtimeRoot() {
  SmallString<256> shared(installPrefix());
  llvm::sys::path::append(shared, "share", "tgc");
  return fromEnv("TGC_RUNTIME_ROOT", shared.c_str());
}

std::string mlir::tg::runtimeLibraryDir() {
  SmallString<256> lib(installPrefix());
  llvm::sys::path::append(lib, "lib");
  return fromEnv("TGC_RUNTIME_LIB", lib.c_str());
}

/// An error naming the runtime header that is not where runtimeRoot() says.
static llvm::Error checkRuntimeSources() {
  SmallString<256> header(runtimeRoot());
  llvm::sys::path::append(header, "runtime", "core", "Model.h");
  if (!llvm::sys::fs::exists(header))
    return llvm::createStringError(
        "cannot find tgc's runtime sources: " + header.str().str() +
        " is missing (tgc looks in share/tgc beside its bin/; set "
        "TGC_RUNTIME_ROOT to a tgc checkout or an install's share/tgc)");
  return llvm::Error::success();
}

llvm::Error mlir::tg::checkRuntimeFiles() {
  if (llvm::Error error = checkRuntimeSources())
    return error;
  SmallString<256> archive(runtimeLibraryDir());
  llvm::sys::path::append(archive, "libtgc_runtime.a");
  if (!llvm::sys::fs::exists(archive))
    return llvm::createStringError(
        "cannot find tgc's runtime library: " + archive.str().str() +
        " is missing (tgc looks in lib beside its bin/; set TGC_RUNTIME_LIB)");
  return llvm::Error::success();
}

/// Space-separated flags from the build configuration.
static void appendFlags(std::vector<std::string> &cmd, StringRef flags) {
  SmallVector<StringRef> parts;
  flags.split(parts, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef flag : parts)
    cmd.push_back(flag.str());
}

/// Runs `cmd` (cmd[0] resolved to `program`); `what` names the compiler in
/// errors.
static llvm::Error run(StringRef program, const std::vector<std::string> &cmd,
                       bool verbose, StringRef what, StringRef source) {
  SmallVector<StringRef> args(cmd.begin(), cmd.end());
  if (verbose) {
    llvm::interleave(args, llvm::errs(), " ");
    llvm::errs() << "\n";
  }
  std::string message;
  int status = llvm::sys::ExecuteAndWait(program, args, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0)
    return llvm::createStringError(
        what.str() + " failed (exit " + std::to_string(status) + ") on " +
        source.str() + (message.empty() ? "" : ": " + message));
  return llvm::Error::success();
}

/// The command that compiles one unit `source` to the object `object`.
/// The host compiler and the flags every unit is compiled with.
static std::vector<std::string>
unitCompilerFlags(const HostCompileOptions &options) {
  std::vector<std::string> cmd = {fromEnv("CXX", TGC_HOST_CXX), "-std=c++17",
                                  options.optimization};
  if (options.nativeArch)
    cmd.push_back("-march=native");
  appendFlags(cmd, TGC_SANITIZE_FLAGS);
  cmd.insert(cmd.end(), {"-fopenmp", "-I" + runtimeRoot()});
  return cmd;
}

/// With `prelude`, the header the compiler reads first (-include), whose
/// precompiled form lies beside it (see preparePrelude).
static std::vector<std::string>
unitCompileCommand(StringRef source, StringRef object,
                   const HostCompileOptions &options, StringRef prelude = "") {
  std::vector<std::string> cmd = unitCompilerFlags(options);
  if (!prelude.empty())
    cmd.insert(cmd.end(), {"-include", prelude.str()});
  cmd.insert(cmd.end(), {"-c", source.str(), "-o", object.str()});
  return cmd;
}

/// What of the build environment an object depends on besides its text and
/// flags: the compiler binary `compiler` (its path, size and time) and every
/// runtime header the generated code can include (runtime/; its CUDA half
/// only for `cuda` code), by content. Computed once per compiler.
/// The program `name` runs: found on the PATH, or `name` itself when it
/// is a path (which findProgramByName returns unchecked); nothing when it
/// is no executable file.
static std::optional<std::string> findExecutable(StringRef name) {
  auto found = llvm::sys::findProgramByName(name);
  if (!found || !llvm::sys::fs::can_execute(*found))
    return std::nullopt;
  return *found;
}

static std::string environmentDigest(StringRef compiler, bool cuda) {
  static llvm::StringMap<std::string> digests;
  std::string memo = (compiler + (cuda ? " cuda" : "")).str();
  if (auto it = digests.find(memo); it != digests.end())
    return it->second;
  std::string digest = [&] {
    std::string text;
    llvm::raw_string_ostream os(text);
    auto program = llvm::sys::findProgramByName(compiler);
    std::string resolved = program ? *program : compiler.str();
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(resolved, real))
      resolved = real.str().str();
    llvm::sys::fs::file_status status;
    os << "compiler " << resolved;
    if (!llvm::sys::fs::status(resolved, status))
      os << " " << status.getSize() << " "
         << status.getLastModificationTime().time_since_epoch().count();
    os << "\n";
    std::string root = runtimeRoot();
    llvm::SmallString<256> runtime(root);
    llvm::sys::path::append(runtime, "runtime");
    std::vector<std::string> headers;
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(runtime, ec), end;
         it != end && !ec; it.increment(ec)) {
      StringRef path = it->path();
      if (!cuda && path.contains("/runtime/cuda"))
        continue;
      if (path.ends_with(".h") || (cuda && path.ends_with(".cuh")))
        headers.push_back(path.str());
    }
    std::sort(headers.begin(), headers.end());
    for (const std::string &h : headers) {
      auto bytes = llvm::MemoryBuffer::getFile(h);
      os << h << " " << (bytes ? sha256Hex((*bytes)->getBuffer()) : "-")
         << "\n";
    }
    return sha256Hex(text);
  }();
  digests[memo] = digest;
  return digest;
}

std::string mlir::tg::unitCacheKey(const SourceUnit &unit,
                                   const HostCompileOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const std::string &arg : unitCompileCommand("SOURCE", "OBJECT", options))
    os << arg << " ";
  os << "\n" << environmentDigest(fromEnv("CXX", TGC_HOST_CXX), false) << "\n";
  if (options.nativeArch) {
    // -march=native: what it means here.
    os << llvm::sys::getHostCPUName();
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    std::vector<std::string> on;
    for (auto &f : features)
      if (f.second)
        on.push_back(f.first().str());
    std::sort(on.begin(), on.end());
    for (const std::string &f : on)
      os << " +" << f;
    os << "\n";
  }
  os << unit.text;
  return sha256Hex(text);
}

/// How one kind of unit becomes an object.
struct ObjectRecipe {
  std::string program;   ///< the compiler
  std::string extension; ///< of the sources written
  std::string what;      ///< "host compiler", "nvcc"
  std::function<std::vector<std::string>(StringRef source, StringRef object)>
      command;
  std::function<std::string(const SourceUnit &)> key;
  bool verbose = false;
  /// Called once before the first unit the cache lacks is compiled, with
  /// the units it lacks (the host compiler's prelude is made there).
  std::function<llvm::Error(ArrayRef<const SourceUnit *>)> beforeCompiling;
};

/// Writes each unit to `workDir`, and compiles it to an object (or takes
/// the object `cache` holds for its key), as many at once as this machine
/// has cores; `objects` are theirs in order.
static llvm::Error buildObjects(llvm::ArrayRef<SourceUnit> units,
                                StringRef workDir, const ObjectRecipe &recipe,
                                const BuildCache &cache, UnitBuildStats *stats,
                                std::vector<std::string> &objects) {
  UnitBuildStats local;
  UnitBuildStats &counts = stats ? *stats : local;
  // Each unit's object: from the cache, or compiled (then stored).
  struct Job {
    std::string source, object, key;
    llvm::sys::ProcessInfo process;
  };
  std::deque<Job> running;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool cacheWarned = false;
  // Waits for whichever compile ends first (so that a long unit does not
  // hold the other cores idle), then stores its object.
  auto finishOne = [&]() -> llvm::Error {
    int status = 0;
    pid_t pid;
    do
      pid = ::waitpid(-1, &status, 0);
    while (pid < 0 && errno == EINTR);
    auto it = llvm::find_if(
        running, [&](const Job &job) { return job.process.Pid == pid; });
    if (pid < 0 || it == running.end())
      return llvm::createStringError("lost track of the " + recipe.what +
                                     "'s processes");
    Job job = std::move(*it);
    running.erase(it);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return llvm::createStringError(
          recipe.what + " failed (" +
          (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                             : "signal " + std::to_string(WTERMSIG(status))) +
          ") on " + job.source);
    ++counts.compiled;
    if (llvm::Error error = cache.store(job.key, job.object)) {
      // A cache that cannot be written costs time, not the build.
      if (!cacheWarned)
        llvm::errs() << "tgc: warning: " << llvm::toString(std::move(error))
                     << "; building without it\n";
      cacheWarned = true;
    }
    return llvm::Error::success();
  };
  // A failed unit: the others still compiling are waited for (their
  // directory goes next), and the first error is the one reported.
  auto abandon = [&](llvm::Error error) {
    for (Job &job : running)
      (void)llvm::sys::Wait(job.process, std::nullopt);
    running.clear();
    return error;
  };
  // First what the cache holds, then the rest compiled.
  struct Missing {
    const SourceUnit *unit;
    std::string source, object, key;
  };
  std::vector<Missing> missing;
  for (const SourceUnit &unit : units) {
    llvm::SmallString<256> source(workDir), object(workDir);
    llvm::sys::path::append(source, unit.name + "." + recipe.extension);
    llvm::sys::path::append(object, unit.name + ".o");
    // The source is written whatever the cache holds: --save-temps keeps
    // every unit's.
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(source, ec);
      if (ec)
        return llvm::createStringError("cannot write " + source.str().str() +
                                       ": " + ec.message());
      os << unit.text;
    }
    objects.push_back(object.str().str());
    std::string key = recipe.key(unit);
    if (cache.fetch(key, object)) {
      ++counts.reused;
      continue;
    }
    missing.push_back({&unit, source.str().str(), object.str().str(), key});
  }
  if (!missing.empty() && recipe.beforeCompiling) {
    SmallVector<const SourceUnit *> lacking;
    for (const Missing &m : missing)
      lacking.push_back(m.unit);
    if (llvm::Error error = recipe.beforeCompiling(lacking))
      return error;
  }
  for (Missing &m : missing) {
    StringRef source = m.source, object = m.object;
    std::string key = std::move(m.key);
    std::vector<std::string> cmd = recipe.command(source, object);
    SmallVector<StringRef> args(cmd.begin(), cmd.end());
    if (recipe.verbose) {
      llvm::interleave(args, llvm::errs(), " ");
      llvm::errs() << "\n";
    }
    if (running.size() >= jobs)
      if (llvm::Error error = finishOne())
        return abandon(std::move(error));
    std::string message;
    bool failedToStart = false;
    llvm::sys::ProcessInfo process = llvm::sys::ExecuteNoWait(
        recipe.program, args, std::nullopt, {}, 0, &message, &failedToStart);
    if (failedToStart)
      return llvm::createStringError("cannot run the " + recipe.what + " on " +
                                     source.str() + ": " + message);
    running.push_back({source.str(), object.str(), key, process});
  }
  while (!running.empty())
    if (llvm::Error error = finishOne())
      return abandon(std::move(error));
  return llvm::Error::success();
}

/// The #include lines at the top of every unit (before its first line of
/// code), in the first unit's order: the headers each of them parses.
static std::string commonIncludes(ArrayRef<const SourceUnit *> units) {
  auto leadingIncludes = [](StringRef text) {
    llvm::SmallVector<StringRef> includes;
    llvm::SmallVector<StringRef> lines;
    text.split(lines, '\n');
    for (StringRef line : lines) {
      line = line.trim();
      if (line.starts_with("#include "))
        includes.push_back(line);
      else if (!line.empty() && !line.starts_with("//"))
        break;
    }
    return includes;
  };
  llvm::SmallVector<StringRef> common = leadingIncludes(units.front()->text);
  for (const SourceUnit *unit : units.drop_front()) {
    llvm::SmallVector<StringRef> own = leadingIncludes(unit->text);
    llvm::erase_if(
        common, [&](StringRef line) { return !llvm::is_contained(own, line); });
  }
  std::string text;
  for (StringRef line : common)
    text += line.str() + "\n";
  return text;
}

/// The headers that every unit to compile includes, precompiled once: the
/// runtime's and the standard library's parsing is most of a small unit's
/// compile (gpt2-tiny's nine units: 4.3 s of g++ alone, 2.1 s with the
/// prelude, which takes 1.1 s to make and is kept in the build cache). Sets
/// `prelude` to the header in `workDir` to -include, the .gch beside it;
/// leaves it empty where one unit is compiled or the headers cannot be
/// precompiled (each unit then parses its headers itself, as it can).
static void preparePrelude(ArrayRef<const SourceUnit *> units,
                           StringRef workDir, const HostCompileOptions &options,
                           const BuildCache &cache, std::string &prelude) {
  prelude.clear();
  if (units.size() < 2)
    return;
  std::string text = commonIncludes(units);
  if (text.empty())
    return;
  SmallString<256> header(workDir);
  llvm::sys::path::append(header, "tgc_prelude.h");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(header, ec);
    if (ec)
      return;
    os << text;
  }
  std::string precompiled = (header + ".gch").str();
  std::string key =
      unitCacheKey({"tgc_prelude.h", "// precompiled\n" + text}, options);
  if (!cache.fetch(key, precompiled)) {
    std::vector<std::string> cmd = unitCompilerFlags(options);
    cmd.insert(cmd.end(),
               {"-x", "c++-header", header.str().str(), "-o", precompiled});
    std::optional<std::string> program = findExecutable(cmd.front());
    if (!program)
      return;
    if (llvm::Error error =
            run(*program, cmd, options.verbose, "host compiler", header)) {
      llvm::consumeError(std::move(error));
      (void)llvm::sys::fs::remove(precompiled);
      return;
    }
    // A cache that cannot be written costs the next build this compile.
    llvm::consumeError(cache.store(key, precompiled));
  }
  prelude = header.str().str();
}

llvm::Error mlir::tg::compileUnits(llvm::ArrayRef<SourceUnit> units,
                                   StringRef workDir, StringRef executable,
                                   const HostCompileOptions &options,
                                   const BuildCache &cache,
                                   UnitBuildStats *stats) {
  if (llvm::Error error = checkRuntimeFiles())
    return error;
  std::string cxx = fromEnv("CXX", TGC_HOST_CXX);
  std::optional<std::string> program = findExecutable(cxx);
  if (!program)
    return llvm::createStringError("host C++ compiler '" + cxx +
                                   "' not found (set CXX)");
  std::string prelude;
  ObjectRecipe recipe{
      *program,
      "cpp",
      "host compiler",
      [&](StringRef source, StringRef object) {
        return unitCompileCommand(source, object, options, prelude);
      },
      [&](const SourceUnit &unit) { return unitCacheKey(unit, options); },
      options.verbose,
      [&](ArrayRef<const SourceUnit *> lacking) {
        preparePrelude(lacking, workDir, options, cache, prelude);
        return llvm::Error::success();
      }};
  std::vector<std::string> objects;
  if (llvm::Error error =
          buildObjects(units, workDir, recipe, cache, stats, objects))
    return error;

  // The link.
  std::string lib = runtimeLibraryDir();
  std::vector<std::string> cmd = {cxx};
  appendFlags(cmd, TGC_SANITIZE_FLAGS);
  cmd.push_back("-fopenmp");
  cmd.insert(cmd.end(), objects.begin(), objects.end());
  cmd.insert(cmd.end(), {"-o", executable.str(), "-L" + lib, "-ltgc_runtime",
                         "-ltgc_cpu_kernels", "-lopenblas"});
  appendFlags(cmd, TGC_MPI_LINK_FLAGS);
  cmd.push_back("-lpthread");
  return run(*program, cmd, options.verbose, "linker", executable);
}

//===----------------------------------------------------------------------===//
// nvcc
//===----------------------------------------------------------------------===//

llvm::Expected<std::string> mlir::tg::findNvcc() {
  std::string fromVariable = fromEnv("NVCC", "");
  if (!fromVariable.empty()) {
    if (std::optional<std::string> found = findExecutable(fromVariable))
      return *found;
    return llvm::createStringError("NVCC=" + fromVariable +
                                   " is not an executable");
  }
  if (std::optional<std::string> found = findExecutable("nvcc"))
    return *found;
  for (StringRef candidate : {StringRef("/usr/local/cuda/bin/nvcc"),
                              StringRef(TGC_NVCC)})
    if (!candidate.empty() && llvm::sys::fs::can_execute(candidate))
      return candidate.str();
  return llvm::createStringError(
      "nvcc not found in PATH or /usr/local/cuda/bin: --target=cuda needs the "
      "CUDA toolkit (or set NVCC); --emit=cuda writes the sources and a "
      "CMakeLists.txt to build on a GPU machine");
}

/// nvcc's command for the object of `source` (device code for the options'
/// architecture, host code at their optimization).
static std::vector<std::string>
cudaObjectCommand(StringRef nvcc, StringRef source, StringRef object,
                  const CudaCompileOptions &options) {
  std::string root = runtimeRoot();
  std::vector<std::string> cmd = {nvcc.str(),
                                  options.optimization,
                                  "-arch=" + options.arch,
                                  "-std=c++17",
                                  "-I" + root,
                                  "-c",
                                  source.str(),
                                  "-o",
                                  object.str()};
  SmallVector<StringRef> sanitize;
  StringRef(TGC_SANITIZE_FLAGS).split(sanitize, ' ', -1, false);
  for (StringRef flag : sanitize)
    cmd.push_back(("-Xcompiler=" + flag).str());
  return cmd;
}

std::vector<std::string>
mlir::tg::cudaLinkCommand(StringRef nvcc, ArrayRef<std::string> objects,
                          StringRef executable,
                          const CudaCompileOptions &options) {
  std::string lib = runtimeLibraryDir();
  std::vector<std::string> cmd = {nvcc.str(), "-arch=" + options.arch};
  cmd.insert(cmd.end(), objects.begin(), objects.end());
  cmd.insert(cmd.end(),
             {"-o", executable.str(), "-L" + lib, "-ltgc_runtime_cuda"});
  // The NCCL backend before the runtime that reaches it through a weak
  // symbol, the system libraries after (runtime/comm/CMakeLists.txt).
  appendFlags(cmd, TGC_NCCL_NVCC_LINK_FLAGS);
  cmd.push_back("-ltgc_runtime");
  appendFlags(cmd, TGC_MPI_LINK_FLAGS);
  appendFlags(cmd, TGC_NCCL_SYSTEM_LIBS);
  // The training loop sets OpenMP threads (omp_set_num_threads).
  cmd.insert(cmd.end(), {"-lcublasLt", "-lcublas", "-lcudart", "-Xcompiler",
                         "-fopenmp", "-lgomp", "-lpthread"});
  // A sanitizer build's runtime needs the sanitizers' libraries.
  SmallVector<StringRef> sanitize;
  StringRef(TGC_SANITIZE_FLAGS).split(sanitize, ' ', -1, false);
  for (StringRef flag : sanitize)
    cmd.push_back(("-Xcompiler=" + flag).str());
  if (!sanitize.empty())
    cmd.insert(cmd.end(), {"-lasan", "-lubsan"});
  return cmd;
}

llvm::Error mlir::tg::compileCudaUnits(llvm::ArrayRef<SourceUnit> units,
                                       StringRef workDir, StringRef executable,
                                       const CudaCompileOptions &options,
                                       const BuildCache &cache,
                                       UnitBuildStats *stats) {
  auto nvcc = findNvcc();
  if (!nvcc)
    return nvcc.takeError();
  // The archives it links are the GPU runtime's, checked below.
  if (llvm::Error error = checkRuntimeSources())
    return error;
  std::string lib = runtimeLibraryDir();
  for (StringRef archive : {"libtgc_runtime_cuda.a", "libtgc_runtime.a"}) {
    SmallString<256> path(lib);
    llvm::sys::path::append(path, archive);
    if (!llvm::sys::fs::exists(path))
      return llvm::createStringError(
          "the GPU runtime is not built: " + path.str().str() +
          " is missing (build tgc where CMake finds the CUDA toolkit, or set "
          "TGC_RUNTIME_LIB)");
  }
  // An object by content: the unit, nvcc's command (without the file
  // names), nvcc itself and the runtime headers, CUDA's included.
  std::string environment;
  for (const std::string &arg :
       cudaObjectCommand(*nvcc, "SOURCE", "OBJECT", options))
    environment += arg + " ";
  environment += "\n" + environmentDigest(*nvcc, true) + "\n";
  ObjectRecipe recipe{*nvcc,
                      "cu",
                      "nvcc",
                      [&](StringRef source, StringRef object) {
                        return cudaObjectCommand(*nvcc, source, object,
                                                 options);
                      },
                      [&](const SourceUnit &unit) {
                        return sha256Hex(environment + unit.text);
                      },
                      options.verbose};
  std::vector<std::string> objects;
  if (llvm::Error error =
          buildObjects(units, workDir, recipe, cache, stats, objects))
    return error;
  return run(*nvcc, cudaLinkCommand(*nvcc, objects, executable, options),
             options.verbose, "nvcc", executable);
}

//===----------------------------------------------------------------------===//
// --simt: the CUDA source on the host
//===----------------------------------------------------------------------===//

std::vector<std::string>
mlir::tg::simtRewriteCommand(StringRef source, StringRef rewritten) {
  std::string root = runtimeRoot();
  SmallString<256> script(root);
  llvm::sys::path::append(script, "runtime", "cuda", "simt",
                          "simt_rewrite.py");
  return {"python3", script.str().str(), source.str(), rewritten.str()};
}

std::vector<std::string>
mlir::tg::simtCompileCommand(StringRef rewritten, StringRef executable,
                             bool withNccl,
                             const SimtCompileOptions &options) {
  std::string root = runtimeRoot();
  std::string lib = runtimeLibraryDir();
  SmallString<256> simtDir(root);
  llvm::sys::path::append(simtDir, "runtime", "cuda", "simt");
  SmallString<256> simtHeader(simtDir), simtInclude(simtDir);
  llvm::sys::path::append(simtHeader, "Simt.h");
  llvm::sys::path::append(simtInclude, "include");
  // The flags runtime/cuda/simt compiles runtime/cuda's .cu files with:
  // CUDA code reads bf16 packs through reinterpret_cast, which g++'s
  // type-based alias analysis need not respect.
  std::vector<std::string> cmd = {fromEnv("CXX", TGC_HOST_CXX), "-std=c++17",
                                  options.optimization,
                                  "-fno-strict-aliasing"};
  appendFlags(cmd, TGC_SANITIZE_FLAGS);
  // The stand-in cub before the toolkit's headers, whose APIs the stand-ins
  // define.
  cmd.insert(cmd.end(), {"-fopenmp", "-include", simtHeader.str().str(),
                         "-I" + simtInclude.str().str(), "-I" + root});
  SmallVector<StringRef> includes;
  StringRef(TGC_CUDA_INCLUDE_DIRS).split(includes, ' ', -1, false);
  for (StringRef dir : includes)
    cmd.push_back(("-I" + dir).str());
  cmd.insert(cmd.end(), {rewritten.str(), "-o", executable.str(), "-L" + lib});
  // The NCCL backend before the runtime that reaches it through a weak
  // symbol (runtime/comm/Backend.h).
  if (withNccl)
    cmd.insert(cmd.end(),
               {"-Wl,-u,tgc_comm_create_nccl", "-ltgc_comm_nccl_simt"});
  cmd.insert(cmd.end(), {"-ltgc_runtime_cuda_simt", "-ltgc_runtime"});
  appendFlags(cmd, TGC_MPI_LINK_FLAGS);
  cmd.insert(cmd.end(), {"-lopenblas", "-pthread"});
  return cmd;
}

llvm::Error mlir::tg::compileSimtExecutable(StringRef source,
                                            StringRef rewritten,
                                            StringRef executable,
                                            const SimtCompileOptions &options) {
  std::string lib = runtimeLibraryDir();
  bool libOverridden = !fromEnv("TGC_RUNTIME_LIB", "").empty();
  if (!TGC_HAVE_SIMT && !libOverridden)
    return llvm::createStringError(
        "--simt needs the host build of the CUDA runtime, and this tgc was "
        "built without it (runtime/cuda/simt needs the CUDA toolkit's "
        "headers, Python 3 and OpenBLAS, and TGC_RUNTIME_SIMT=ON)");
  if (StringRef(TGC_CUDA_INCLUDE_DIRS).empty())
    return llvm::createStringError(
        "--simt compiles against the CUDA toolkit's headers, and CMake found "
        "none when tgc was built");
  for (StringRef archive : {"libtgc_runtime_cuda_simt.a", "libtgc_runtime.a"}) {
    SmallString<256> path(lib);
    llvm::sys::path::append(path, archive);
    if (!llvm::sys::fs::exists(path))
      return llvm::createStringError(
          "the host CUDA runtime is not built: " + path.str().str() +
          " is missing (build the target tgc_runtime_cuda_simt, or set "
          "TGC_RUNTIME_LIB)");
  }
  SmallString<256> nccl(lib);
  llvm::sys::path::append(nccl, "libtgc_comm_nccl_simt.a");
  bool withNccl = llvm::sys::fs::exists(nccl);

  std::vector<std::string> rewrite = simtRewriteCommand(source, rewritten);
  std::optional<std::string> python = findExecutable(rewrite[0]);
  if (!python && !StringRef(TGC_PYTHON).empty() &&
      llvm::sys::fs::can_execute(TGC_PYTHON))
    python = std::string(TGC_PYTHON);
  if (!python)
    return llvm::createStringError(
        "--simt runs runtime/cuda/simt/simt_rewrite.py, and python3 is not "
        "on PATH");
  if (!llvm::sys::fs::exists(rewrite[1]))
    return llvm::createStringError(
        "--simt: " + rewrite[1] +
        " is missing (set TGC_RUNTIME_ROOT to a tgc checkout or an install's "
        "share/tgc)");
  if (llvm::Error error =
          run(*python, rewrite, options.verbose, "simt_rewrite.py", source))
    return error;

  std::vector<std::string> cmd =
      simtCompileCommand(rewritten, executable, withNccl, options);
  std::optional<std::string> compiler = findExecutable(cmd[0]);
  if (!compiler)
    return llvm::createStringError("host C++ compiler '" + cmd[0] +
                                   "' not found (set CXX)");
  return run(*compiler, cmd, options.verbose, "host compiler", source);
}
