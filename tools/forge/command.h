// How the forge CLI is put together: each command lives in its own file and
// registers itself with a static initialiser, so adding a command touches one file.
//
//   static const bool registered = forge::cli::register_command(
//       {"tokenize", "Print the token ids of a text", [](CLI::App& sub) { ... sub.callback(...); }});
//
// Benchmarks register under `forge bench NAME` with register_bench.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace forge::cli {

struct Command {
  std::string name;
  std::string help;
  // Adds options to the subcommand and sets its callback.
  std::function<void(CLI::App& sub)> setup;
};

bool register_command(Command c);
bool register_bench(Command c);

}  // namespace forge::cli
