// forge serve -m DIR [--adapter DIR] [--host 127.0.0.1] [--port 8080]
//   [--device auto|cpu|webgpu] [--api-key KEY] [--max-batch N] [--ctx N] [--queue N]
// An OpenAI-compatible HTTP server (serve_http.h) over one model, with
// continuous batching (serve/scheduler.h). Prints "forge: listening on
// http://HOST:PORT" once it accepts connections (--port 0: a free port).
// SIGINT / SIGTERM: new requests get 503 while the ones in flight finish,
// then the server closes and exits 0 (a second signal exits at once).
#include <sys/socket.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <thread>

#include "chat_prompt.h"
#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "interrupt.h"
#include "model_arg.h"
#include "serve_http.h"

namespace forge::cli {
namespace {

constexpr size_t kMaxBody = 4u << 20;  // bytes of a request body (413 beyond)

struct ServeArgs {
  std::string model, adapter, host = "127.0.0.1", device = "auto", api_key;
  std::string dtype = "f32";  // --dtype: dense weights on the device
  int64_t port = 8080, max_batch = 8, ctx = 0, queue = 64;
};

bool has_tokenizer(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "tokenizer.json") || std::filesystem::exists(dir / "vocab.json");
}

void run(const ServeArgs& a) {
  const Device dev = resolve_devices(a.device)[0];
  const std::filesystem::path dir = model_folder(a.model);
  StopSignals signals;  // from here on a signal stops the server cleanly
  std::signal(SIGPIPE, SIG_IGN);  // a client that left is seen as a failed write
  ServeContext ctx;
  ctx.model_id = std::filesystem::exists(a.model) ? dir.filename().string() : a.model;
  if (ctx.model_id.empty()) ctx.model_id = dir.parent_path().filename().string();
  ctx.api_key = a.api_key;
  ctx.created = int64_t(std::time(nullptr));
  if (has_tokenizer(dir)) ctx.tok = Tokenizer::from_dir(dir);
  std::unique_ptr<CausalLM> model = load_model_and_adapter(dir, dev, a.adapter, weights_dtype(a.dtype));
  ctx.model = model.get();
  ctx.stop_ids = model->info().eos;
  if (ctx.stop_ids.empty() && ctx.tok && ctx.tok->eos_id()) ctx.stop_ids = {*ctx.tok->eos_id()};
  ctx.chat_stop_ids = ctx.stop_ids;
  if (ctx.tok) {
    try {
      ctx.tmpl = load_chat_template(dir, a.model, "serve");
      ctx.chat_stop_ids = chat_stop_ids(*model, *ctx.tok, *ctx.tmpl);
    } catch (const IoError&) {  // no template: chat requests answer 400
    }
  }
  // Every sequence's KV cache rows are allocated up front: bound the context.
  const int64_t ctx_len = a.ctx ? a.ctx : std::min<int64_t>(model->context_length(), 2048);
  if (ctx_len > model->context_length())
    throw UsageError("--ctx " + std::to_string(a.ctx) + " exceeds the model's context length " +
                     std::to_string(model->context_length()));
  serve::Metrics metrics;
  serve::Scheduler scheduler(*model, {a.max_batch, ctx_len, a.queue}, &metrics);
  ctx.scheduler = &scheduler;
  ctx.metrics = &metrics;

  httplib::Server svr;
  // A streamed request holds its connection's thread: room for every row and the queue.
  const size_t threads = size_t(a.max_batch + a.queue + 4);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  install_routes(svr, ctx, kMaxBody);
  // httplib (0.11) listens with a backlog of 5: of 32 clients connecting at
  // once, some would have their SYN dropped and retried a second later.
  // Listening again on the bound socket raises it.
  int listen_fd = -1;
  svr.set_socket_options([&listen_fd](socket_t s) {
    httplib::default_socket_options(s);
    listen_fd = s;
  });
  int port = int(a.port);
  if (a.port == 0) port = svr.bind_to_any_port(a.host);
  else if (!svr.bind_to_port(a.host, port)) port = -1;
  if (port < 0)
    throw IoError("[serve] cannot listen on " + a.host + ":" + std::to_string(a.port) + " (in use, or not an address here)");
  if (listen_fd >= 0) ::listen(listen_fd, SOMAXCONN);
  std::thread listener([&svr] { svr.listen_after_bind(); });
  std::fprintf(stderr, "forge: %s on %s (%s), batch %lld, context %lld\n", ctx.model_id.c_str(), dev.name().c_str(),
               scheduler.batched() ? "batched decode" : "one forward per sequence", (long long)a.max_batch,
               (long long)scheduler.ctx());
  std::fprintf(stderr, "forge: listening on http://%s:%d\n", a.host.c_str(), port);
  std::fflush(stderr);
  while (!signals.received()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (const int sig = signals.received())
    std::fprintf(stderr, "forge: %s: finishing the requests in flight, then stopping\n", StopSignals::name(sig));
  // Drain: new requests get 503 while those in flight finish (httplib's stop
  // would cut off a stream), then the listener closes.
  ctx.stopping = true;
  while (ctx.in_flight > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  svr.stop();
  listener.join();
  scheduler.shutdown();
  std::fprintf(stderr, "forge: stopped\n");
}

const bool registered = register_command(
    {"serve", "Serve a model over an OpenAI-compatible HTTP API (completions, chat, streaming)", [](CLI::App& sub) {
       static ServeArgs a;
       sub.add_option("-m,--model", a.model, "Model folder (config.json + safetensors [+ tokenizer]), or a Hugging Face id org/name[@revision]")->required();
       sub.add_option("--host", a.host, "Address to listen on")->capture_default_str();
       check_int_between(sub.add_option("--port", a.port, "Port to listen on (0: any free port)")->capture_default_str(), 0, 65535);
       sub.add_option("--adapter", a.adapter, "A LoRA adapter folder (PEFT layout) to apply to the model");
       add_dtype_option(sub, a.dtype);
       add_device_option(sub, a.device);
       sub.add_option("--api-key", a.api_key, "Require 'Authorization: Bearer KEY' on /v1/ routes");
       check_at_least(sub.add_option("--max-batch", a.max_batch, "Sequences decoded together")->capture_default_str(), 1);
       check_at_least(sub.add_option("--ctx", a.ctx, "Positions per sequence, prompt + reply (default: the model's, at most 2048)"), 1);
       check_at_least(sub.add_option("--queue", a.queue, "Requests that may wait for a batch slot (503 beyond)")->capture_default_str(), 0);
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
