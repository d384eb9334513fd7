//===- RendezvousTest.cpp - The rendezvous file protocol --------*- C++ -*-===//
//
// Rank 0 and another rank as two processes (fork), and the stale files a
// previous run can leave: another run id, another world size, an old record
// without run id, an old abort notice.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Rendezvous.h"

#include "runtime/core/Error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace tgc;
using namespace tgc::comm;

namespace {

class RendezvousTest : public ::testing::Test {
protected:
  void SetUp() override {
    char name[] = "/tmp/tgc-rendezvous-test.XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
    path_ = dir_ + "/rendezvous";
  }
  void TearDown() override {
    std::string command = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }

  RendezvousOptions options(const std::string &runId, int worldSize = 2,
                            double timeout = 5) {
    RendezvousOptions o;
    o.path = path_;
    o.runId = runId;
    o.worldSize = worldSize;
    o.timeoutSeconds = timeout;
    return o;
  }

  /// Sets the file's mtime `age` seconds into the past.
  void age(const std::string &path, double seconds) {
    struct timespec times[2];
    clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= static_cast<time_t>(seconds);
    times[1] = times[0];
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }

  std::string awaitError(RendezvousOptions o) {
    try {
      Rendezvous(o).await();
    } catch (const Error &e) {
      return e.what();
    }
    return "(no error)";
  }

  std::string dir_, path_;
};

TEST_F(RendezvousTest, PayloadReachesAnotherProcess) {
  std::string payload("\0\x01\xff secret", 10);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The other rank starts first and waits.
    try {
      std::string got = Rendezvous(options("run-1")).await();
      ::_exit(got == payload ? 0 : 2);
    } catch (...) {
      ::_exit(3);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Rendezvous rank0(options("run-1"));
  rank0.publish(payload);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  rank0.retire();
  EXPECT_NE(::access(path_.c_str(), F_OK), 0) << "retire() removes the record";
}

TEST_F(RendezvousTest, AnotherRunIdIsWaitedPast) {
  Rendezvous(options("old-run")).publish("stale");
  std::string error = awaitError(options("new-run", 2, 0.5));
  EXPECT_NE(error.find(path_ + ": rank 0 published no rendezvous record for "
                               "this run within 0.5 s (TGC_NCCL_TIMEOUT)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("its run id is 'old-run', not 'new-run'"),
            std::string::npos)
      << error;
}

TEST_F(RendezvousTest, AnotherWorldSizeIsWaitedPast) {
  Rendezvous(options("run", 4)).publish("stale");
  std::string error = awaitError(options("run", 2, 0.3));
  EXPECT_NE(error.find("it is for a world size of 4, not 2"), std::string::npos)
      << error;
}

TEST_F(RendezvousTest, WithoutRunIdAnOldRecordIsWaitedPast) {
  Rendezvous(options("")).publish("stale");
  age(path_, 3600);
  std::string error = awaitError(options("", 2, 0.3));
  EXPECT_NE(error.find("before this process started (no run id: set "
                       "TGC_RUN_ID"),
            std::string::npos)
      << error;

  // A record from just before this process started (launch skew) counts.
  Rendezvous(options("")).publish("fresh");
  age(path_, 1);
  EXPECT_EQ(Rendezvous(options("")).await(), "fresh");
}

TEST_F(RendezvousTest, StaleRecordIsReplacedByTheNewOne) {
  Rendezvous(options("old")).publish("stale");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      ::_exit(Rendezvous(options("new")).await() == "fresh" ? 0 : 2);
    } catch (...) {
      ::_exit(3);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Rendezvous(options("new")).publish("fresh");
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(RendezvousTest, RankZeroFailureEndsTheWaitAtOnce) {
  Rendezvous(options("old")).publishFailure("an old failure");
  Rendezvous(options("run")).publishFailure("rank 0 has no CUDA\ndevice");
  auto start = std::chrono::steady_clock::now();
  std::string error = awaitError(options("run", 2, 100));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(error, path_ + ": rank 0 could not start: rank 0 has no CUDA "
                           "device");
}

TEST_F(RendezvousTest, MissingFileTimesOut) {
  std::string error = awaitError(options("run", 2, 0.3));
  EXPECT_NE(error.find("the file does not exist: is rank 0 running"),
            std::string::npos)
      << error;
}

TEST_F(RendezvousTest, MissingDirectoryFailsAtOnce) {
  RendezvousOptions o = options("run", 2, 100);
  o.path = dir_ + "/no/such/dir/rendezvous";
  auto start = std::chrono::steady_clock::now();
  std::string error = awaitError(o);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(error.find("the rendezvous file's directory " + dir_ +
                       "/no/such/dir does not exist"),
            std::string::npos)
      << error;
}

TEST_F(RendezvousTest, GarbageIsNotARecord) {
  std::ofstream(path_) << "hello\n";
  std::string error = awaitError(options("run", 2, 0.3));
  EXPECT_NE(error.find("it is not a tgc rendezvous record"), std::string::npos)
      << error;
}

TEST_F(RendezvousTest, AbortNoticeReachesTheSessionOnly) {
  Rendezvous rank0(options("run"));
  rank0.publish("id");
  Rendezvous rank1(options("run"));
  ASSERT_EQ(rank1.await(), "id");
  EXPECT_EQ(rank0.pollAbort(), "");
  rank1.postAbort(1, "out of\nmemory");
  EXPECT_EQ(rank0.pollAbort(), "rank 1: out of memory");

  // The next run (same path, same run id even) is not ended by it: rank 0
  // removes the notice when it publishes, and the session differs anyway.
  Rendezvous next0(options("run"));
  std::string oldNotice;
  {
    std::ifstream in(rank0.abortPath());
    oldNotice.assign(std::istreambuf_iterator<char>(in), {});
  }
  next0.publish("id2");
  EXPECT_NE(::access(next0.abortPath().c_str(), F_OK), 0);
  std::ofstream(next0.abortPath()) << oldNotice; // as if written late
  EXPECT_EQ(next0.pollAbort(), "");
}

TEST_F(RendezvousTest, ProcessStartTimeIsInThePast) {
  double start = Rendezvous::processStartTime();
  double now = std::chrono::duration<double>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 3600);
}

} // namespace
