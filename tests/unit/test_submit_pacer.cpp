// SubmitPacer: a batch recorded while the device is idle goes to it early,
// in batches that double; one recorded while the device is busy does not.
#include <gtest/gtest.h>

#include "gpu/submit_pacer.h"

namespace forge::gpu {
namespace {

// Dispatches recorded one at a time until `total`, submitting whenever the
// pacer says so; returns the sizes of the batches it submitted early.
std::vector<size_t> record(SubmitPacer& p, size_t total) {
  std::vector<size_t> early;
  size_t open = 0;
  for (size_t i = 0; i < total; ++i)
    if (p.submit_now(++open)) {
      p.submitted();
      early.push_back(open);
      open = 0;
    }
  return early;
}

TEST(SubmitPacer, AnIdleDeviceGetsBatchesThatDoubleUpToTheLast) {
  SubmitPacer p;  // a new device is idle
  EXPECT_EQ(record(p, 1000), (std::vector<size_t>{16, 32, 64, 128, 256}));
  EXPECT_EQ(p.submits(), 5u);
  // Past the last early batch, work is submitted only when asked.
  EXPECT_TRUE(record(p, 5000).empty());
}

TEST(SubmitPacer, AWaitThatLeavesNothingInFlightStartsAgain) {
  SubmitPacer p;
  record(p, 1000);
  const uint64_t last = p.submitted();  // the batch a read back ends
  p.waited_for(last);
  EXPECT_EQ(record(p, 40), (std::vector<size_t>{16}));
}

TEST(SubmitPacer, WorkRecordedWhileTheDeviceIsBusyStaysOneBatch) {
  SubmitPacer p;
  record(p, 1000);
  // A pipelined decode: step n + 1 is submitted before step n's token is read.
  uint64_t previous = p.submitted();
  for (int step = 0; step < 10; ++step) {
    EXPECT_TRUE(record(p, 65).empty());
    const uint64_t current = p.submitted();
    p.waited_for(previous);  // something (step n + 1) is still in flight
    previous = current;
  }
}

}  // namespace
}  // namespace forge::gpu
