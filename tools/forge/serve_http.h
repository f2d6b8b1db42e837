// The HTTP routes of `forge serve` on a cpp-httplib server:
//   POST /v1/completions, POST /v1/chat/completions (stream: server-sent
//   events ending with "data: [DONE]"), GET /v1/models, /v1/models/{id},
//   /health, /metrics. Errors are OpenAI's {"error": {...}} with 400, 401
//   (--api-key), 404, 413 (body over max_body), 500 and 503 (queue full,
//   shutting down).
#pragma once
#include <httplib.h>

#include "serve_context.h"

namespace forge::cli {

void install_routes(httplib::Server& server, ServeContext& ctx, size_t max_body);

}  // namespace forge::cli
