// forge: the command-line program. Commands are in cmd_*.cpp, one file each;
// the conventions they share (exit codes, messages, flags) are in cli_util.h.
#include <csignal>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "cli_util.h"
#include "command.h"
#include "cpu/blas_setup.h"
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

namespace {

int usage_error(const std::string& message, const std::string& help_topic) {
  std::fprintf(stderr, "forge: error: %s (see forge help%s)\n", message.c_str(),
               help_topic.empty() ? "" : (" " + help_topic).c_str());
  return 2;
}

// CLI11 puts the option's name before a validator's message; ours name the
// option themselves ("-n must be >= 0, got -5"), so the prefix goes. A value
// CLI11 could not convert ("Could not convert: --top-k = x") is said the
// same way, by the option's type: "--top-k must be an integer, got 'x'".
std::string parse_error_text(const CLI::ParseError& e, CLI::App& app) {
  std::string s = e.what();
  const std::string unconverted = "Could not convert: ";
  const size_t eq = s.find(" = ");
  if (dynamic_cast<const CLI::ConversionError*>(&e) && s.rfind(unconverted, 0) == 0 && eq != std::string::npos) {
    const std::string name = s.substr(unconverted.size(), eq - unconverted.size()), value = s.substr(eq + 3);
    CLI::App* sub = &app;
    while (!sub->get_subcommands().empty()) sub = sub->get_subcommands().front();
    const CLI::Option* opt = sub->get_option_no_throw(name);
    const std::string type = opt ? opt->get_type_name() : "";
    const std::string what = type.rfind("INT", 0) == 0 ? "an integer" : type.rfind("UINT", 0) == 0 ? "an integer in [0, 2^64)"
                                                                                                     : "a number";
    return name + " must be " + what + ", got '" + value + "'";
  }
  // "--steps: --steps must be >= 1", "path: path needs a value": the message names it already.
  const size_t colon = s.find(": ");
  if (dynamic_cast<const CLI::ValidationError*>(&e) && colon != std::string::npos) {
    const std::string rest = s.substr(colon + 2);
    if ((s[0] == '-' && rest[0] == '-') || rest.rfind(s.substr(0, colon) + " ", 0) == 0) s = rest;
  }
  return s;
}

// The command path parsed so far ("train", "bench matmul"), for the help hint.
std::string selected_path(CLI::App& app) {
  std::string path;
  for (CLI::App* a = &app; !a->get_subcommands().empty();) {
    a = a->get_subcommands().front();
    path += (path.empty() ? "" : " ") + a->get_name();
  }
  return path;
}

}  // namespace
}  // namespace forge::cli

int main(int argc, char** argv) {
  using namespace forge::cli;
  // OpenBLAS with generic kernels on a CPU it does not know: once more with the right ones.
  forge::cpu::restart_with_blas_kernels(argv);
  // A file reaching RLIMIT_FSIZE fails its write (EFBIG) with a clear error
  // instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);

  CLI::App app{"forge: train and run transformer language models on the CPU and on WebGPU", "forge"};
  app.set_version_flag("--version", std::string("forge ") + FORGE_VERSION);
  app.footer(
      "Run 'forge help COMMAND' for a command's options.\n"
      "Exit codes: 0 ok, 1 runtime error, 2 usage error, 130 / 143 stopped by SIGINT / SIGTERM.");
  // Help shows every default; an option given twice takes its last value.
  app.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.require_subcommand(1);
  for (auto& c : commands()) c.setup(*app.add_subcommand(c.name, c.help));
  CLI::App* bench = nullptr;
  if (!benches().empty()) {
    bench = app.add_subcommand("bench", "Benchmarks that print figures (JSON with --json)");
    bench->require_subcommand(1);
    for (auto& b : benches()) b.setup(*bench->add_subcommand(b.name, b.help));
  }
  refuse_empty_values(app);

  // `forge` and `forge help [COMMAND [SUBCOMMAND]]` print help.
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::printf("%s", app.help().c_str());
    return 0;
  }
  if (args[0] == "help") {
    CLI::App* topic = &app;
    std::string parents;  // "forge bench" for `forge help bench train`
    for (size_t i = 1; i < args.size(); ++i) {
      CLI::App* sub = nullptr;
      for (CLI::App* s : topic->get_subcommands({})) sub = s->get_name() == args[i] ? s : sub;
      if (!sub) return usage_error("unknown command '" + args[i] + "'", "");
      parents += (parents.empty() ? "" : " ") + topic->get_name();
      topic = sub;
    }
    std::printf("%s", topic->help(parents).c_str());
    return 0;
  }
  // CLI11 reports an unknown command as a missing one; name it instead.
  if (args[0][0] != '-') {
    bool known = bench && args[0] == "bench";
    for (auto& c : commands()) known = known || c.name == args[0];
    if (!known) return usage_error("unknown command '" + args[0] + "'", "");
  }
  if (bench && args[0] == "bench" && args.size() > 1 && args[1][0] != '-') {
    bool known = false;
    for (auto& b : benches()) known = known || b.name == args[1];
    if (!known) return usage_error("unknown benchmark '" + args[1] + "'", "bench");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(parse_error_text(e, app), selected_path(app));
  } catch (const UsageError& e) {
    return usage_error(e.what(), selected_path(app));
  } catch (const ExitCode& e) {
    return e.code;
  } catch (const forge::Error& e) {
    std::fprintf(stderr, "forge: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "forge: error: out of memory: the sizes asked for need more than this machine has\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forge: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
