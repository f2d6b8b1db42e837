// forge: the command-line program. Commands are in cmd_*.cpp, one file each.
#include <cstdio>
#include <string>
#include <vector>

#include "command.h"
#include "forge/error.h"

namespace forge::cli {

static std::vector<Command>& commands() {
  static std::vector<Command> list;
  return list;
}
static std::vector<Command>& benches() {
  static std::vector<Command> list;
  return list;
}
bool register_command(Command c) {
  commands().push_back(std::move(c));
  return true;
}
bool register_bench(Command c) {
  benches().push_back(std::move(c));
  return true;
}

}  // namespace forge::cli

int main(int argc, char** argv) {
  using namespace forge::cli;
  CLI::App app{"forge: train and run transformer language models on the CPU and on WebGPU"};
  app.set_version_flag("--version", std::string("forge ") + FORGE_VERSION);
  app.require_subcommand(1);
  for (auto& c : commands()) c.setup(*app.add_subcommand(c.name, c.help));
  if (!benches().empty()) {
    CLI::App* bench = app.add_subcommand("bench", "Benchmarks that print figures (JSON with --json)");
    bench->require_subcommand(1);
    for (auto& b : benches()) b.setup(*bench->add_subcommand(b.name, b.help));
  }
  // CLI11 reports an unknown command as a missing one; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = std::string(argv[1]) == "bench";
    for (auto& c : commands()) known = known || c.name == argv[1];
    if (!known) {
      std::fprintf(stderr, "forge: unknown command '%s' (see forge --help)\n", argv[1]);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const forge::Error& e) {
    std::fprintf(stderr, "forge: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forge: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
