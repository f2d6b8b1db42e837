// State that a webgpu.h callback fills in, shared between the waiter and the
// callback. The callback holds its own reference, so a waiter that gives up
// (a timeout, a lost device) may return or throw at once: a callback that
// fires later, or is cancelled at shutdown, writes into live memory instead
// of a dead stack frame (which corrupted the heap).
#pragma once
#include <memory>

namespace forge::webgpu {

// The userdata for a callback: a new reference to `state`.
template <class T>
void* callback_ref(const std::shared_ptr<T>& state) {
  return new std::shared_ptr<T>(state);
}

// In the callback: takes back the reference made by callback_ref. Dawn calls
// every callback exactly once (with a "cancelled" status at shutdown).
template <class T>
std::shared_ptr<T> take_callback_ref(void* userdata) {
  auto* ref = static_cast<std::shared_ptr<T>*>(userdata);
  std::shared_ptr<T> state = std::move(*ref);
  delete ref;
  return state;
}

}  // namespace forge::webgpu
