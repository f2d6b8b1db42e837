#include "serve_http.h"

#include <memory>

#include "serve_peer.h"

namespace forge::cli {

using json = nlohmann::json;
using serve::ApiError;

namespace {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  // Replacing bytes that are not UTF-8: a message may quote the request (a
  // JSON parse error shows the bytes it stopped at, a route its path).
  res.set_content(e.body().dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_json(httplib::Response& res, const json& j) {
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

std::string sse(const json& j) {
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

// A streamed request: chunks as each choice produces text; the choices'
// jobs are cancelled when the client goes away (the Generation is dropped).
struct Stream {
  std::unique_ptr<Generation> g;
  std::vector<bool> started, finished;
  bool ended = false;
};

void stream_response(ServeContext& ctx, httplib::Response& res, std::unique_ptr<Generation> g) {
  auto st = std::make_shared<Stream>();
  st->started.assign(g->choices.size(), false);
  st->finished.assign(g->choices.size(), false);
  st->g = std::move(g);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [&ctx, st](size_t, httplib::DataSink& sink) {
        Generation& g = *st->g;
        std::string out;
        bool all = true;
        try {
          for (size_t i = 0; i < g.choices.size(); ++i) {
            if (st->finished[i]) continue;
            Choice& c = *g.choices[i];
            std::vector<uint32_t> ids;
            std::string text = c.poll(std::chrono::milliseconds(g.choices.size() > 1 ? 5 : 100), &ids);
            if (!st->started[i] && g.req.echo && g.req.prompt_text) text = *g.req.prompt_text + text;
            if (!text.empty() || !ids.empty() || !st->started[i] || c.done())
              out += sse(stream_chunk(ctx, g, i, text, ids, c.done() ? c.finish_reason() : "", !st->started[i]));
            st->started[i] = true;
            st->finished[i] = c.done();
            all = all && c.done();
          }
        } catch (const ApiError& e) {
          out += sse(e.body());
          all = true;
        }
        if (all) {
          if (g.req.include_usage) out += sse(usage_chunk(ctx, g));
          out += "data: [DONE]\n\n";
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;  // the client left
        if (all) {
          st->ended = true;
          sink.done();
        }
        return true;
      },
      [&ctx, st](bool) {
        st->g.reset();  // unfinished choices cancel their jobs
        --ctx.in_flight;
      });
}

void completion(ServeContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat) {
  ++ctx.in_flight;
  bool streaming = false;  // then the stream's end counts it out
  try {
    std::unique_ptr<Generation> g = start_generation(ctx, req.body, chat);
    if (g->req.stream) {
      stream_response(ctx, res, std::move(g));
      streaming = true;
    } else {
      const PeerWatch peer(req);
      // A client that left gets nothing; dropping g cancels its jobs at once.
      if (std::optional<json> j = complete(ctx, *g, [&peer] { return peer.closed(); })) send_json(res, *j);
      else res.status = 499;  // "client closed request", as /metrics counts it
    }
  } catch (const ApiError& e) {
    send_error(res, e);
  } catch (...) {
    --ctx.in_flight;
    throw;
  }
  if (!streaming) --ctx.in_flight;
}

json model_entry(const ServeContext& ctx) {
  return {{"id", ctx.model_id}, {"object", "model"}, {"created", ctx.created}, {"owned_by", "forge"}};
}

const char* endpoint_label(const std::string& path) {
  for (const char* p : {"/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/metrics"})
    if (path == p) return p;
  return path.rfind("/v1/models/", 0) == 0 ? "/v1/models/{id}" : "other";
}

}  // namespace

void install_routes(httplib::Server& svr, ServeContext& ctx, size_t max_body) {
  svr.set_payload_max_length(max_body);
  svr.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    if (ctx.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + ctx.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, ApiError(401, "invalid_request_error",
                             req.has_header("Authorization") ? "incorrect API key provided"
                                                             : "no API key provided (Authorization: Bearer KEY)",
                             {}, "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.Post("/v1/completions",
           [&ctx](const httplib::Request& req, httplib::Response& res) { completion(ctx, req, res, false); });
  svr.Post("/v1/chat/completions",
           [&ctx](const httplib::Request& req, httplib::Response& res) { completion(ctx, req, res, true); });
  svr.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"object", "list"}, {"data", json::array({model_entry(ctx)})}});
  });
  svr.Get("/v1/models/(.+)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == ctx.model_id) return send_json(res, model_entry(ctx));
    send_error(res, ApiError(404, "invalid_request_error", "the model '" + std::string(req.matches[1]) +
                                                               "' does not exist; this server has '" + ctx.model_id + "'",
                             "model", "model_not_found"));
  });
  svr.Get("/health", [&ctx](const httplib::Request&, httplib::Response& res) {
    if (ctx.stopping) return send_error(res, ApiError(503, "server_error", "shutting down", {}, "shutting_down"));
    send_json(res, {{"status", "ok"}});
  });
  svr.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(ctx.metrics->text(), "text/plain; version=0.0.4");
  });
  // Statuses httplib sets itself (404 no route, 413 body too large, 400
  // unreadable request) get OpenAI's error body too.
  svr.set_error_handler([max_body](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      send_error(res, ApiError(404, "invalid_request_error", "no route for " + req.method + " " + req.path, {},
                               "not_found"));
    else if (res.status == 413)
      send_error(res, ApiError(413, "invalid_request_error",
                               "the request body exceeds " + std::to_string(max_body) + " bytes", {},
                               "request_too_large"));
    else
      send_error(res, ApiError(res.status, res.status >= 500 ? "server_error" : "invalid_request_error",
                               "the request failed with HTTP status " + std::to_string(res.status)));
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, "server_error", what));
  });
  svr.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    ctx.metrics->request(endpoint_label(req.path), res.status);
  });
}

}  // namespace forge::cli
