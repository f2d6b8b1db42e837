// When a runtime submits its open batch before anything asks it to. Work
// recorded while the device is idle would otherwise wait for the host to
// record all of it (a prefill: about 150 dispatches, a millisecond of the
// host's time) before the device starts. So after a wait that leaves the
// device with nothing in flight, the batch is submitted at 16 dispatches and
// then at sizes that double up to 256, and the device computes while the
// host records the rest. Work recorded while the device is busy (a pipelined
// decode step, submitted before the previous step's token is read) stays one
// batch: splitting it only adds submits. On the H200, GPT-2's prefill of 1024
// tokens took 10.7 ms recorded whole and 10.2 ms paced; a submit every 64
// dispatches whatever the device was doing also made 10.2 ms but cost
// decode 1.3% (a step is 65 dispatches).
#pragma once
#include <cstddef>
#include <cstdint>

namespace forge::gpu {

class SubmitPacer {
 public:
  static constexpr size_t kFirst = 16, kLast = 256;

  // Whether an open batch of `dispatches` should be submitted now.
  bool submit_now(size_t dispatches) {
    if (!at_ || dispatches < at_) return false;
    at_ = at_ < kLast ? at_ * 2 : 0;
    return true;
  }
  // A batch was submitted; returns its number (1, 2, ...).
  uint64_t submitted() { return ++submits_; }
  uint64_t submits() const { return submits_; }
  // A wait for the work of submit `number` has finished: with nothing
  // submitted after it, the device has run dry.
  void waited_for(uint64_t number) {
    if (number == submits_) at_ = kFirst;
  }

 private:
  uint64_t submits_ = 0;
  size_t at_ = kFirst;  // submit at this many dispatches (0: only when asked); the device starts idle
};

}  // namespace forge::gpu
