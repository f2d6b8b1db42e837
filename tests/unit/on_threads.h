// Running one piece of test code on several threads at once, for the tests of
// what the public headers say may be called concurrently.
#pragma once
#include <atomic>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace forge::testing {

// Runs body(t) -> failure text ("" for none) on `n` threads started together;
// each thread's failure, an escaped exception's what() counting as one.
template <class Body>
std::vector<std::string> on_threads(int n, const Body& body) {
  std::vector<std::string> failures(static_cast<size_t>(n));
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();  // start together
      try {
        failures[size_t(t)] = body(t);
      } catch (const std::exception& e) {
        failures[size_t(t)] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  return failures;
}

}  // namespace forge::testing
