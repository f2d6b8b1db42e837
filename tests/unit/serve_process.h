// A `forge serve` child process on a free loopback port (--port 0, the port
// read from its "listening on" line) and an httplib client for it.
#pragma once
#include <httplib.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "unit/cli_process.h"

namespace forge::testing {

class ServeProcess {
 public:
  ServeProcess(const std::filesystem::path& model, const std::filesystem::path& scratch,
               std::vector<std::string> extra = {}, const std::string& device = "cpu")
      : log_(scratch / ("serve_" + std::to_string(count()++) + ".txt")) {
    std::vector<std::string> args = {"serve", "-m", model.string(), "--port", "0", "--device", device};
    args.insert(args.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<CliProcess>(args, log_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    const std::regex re("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    while (std::chrono::steady_clock::now() < deadline && !proc_->finished()) {
      std::smatch m;
      const std::string out = proc_->output();
      if (std::regex_search(out, m, re)) {
        port_ = std::stoi(m[1]);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  bool up() const { return port_ > 0; }
  int port() const { return port_; }
  CliProcess& process() { return *proc_; }
  std::string output() const { return proc_->output(); }
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(120, 0);
    return c;
  }

 private:
  static int& count() {
    static int n = 0;
    return n;
  }
  std::filesystem::path log_;
  std::unique_ptr<CliProcess> proc_;
  int port_ = -1;
};

// The JSON events of a server-sent-event body, and whether it ended with [DONE].
struct SseEvents {
  std::vector<nlohmann::json> events;
  bool done = false;
};
inline SseEvents parse_sse(const std::string& body) {
  SseEvents r;
  for (const std::string& line : lines_of(body)) {
    if (line.rfind("data: ", 0) != 0) continue;
    const std::string data = line.substr(6);
    if (data == "[DONE]") r.done = true;
    else r.events.push_back(nlohmann::json::parse(data));
  }
  return r;
}

}  // namespace forge::testing
