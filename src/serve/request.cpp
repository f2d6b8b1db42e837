#include "serve/request.h"

#include <cmath>

namespace forge::serve {

using json = nlohmann::json;

json ApiError::body() const {
  json e{{"message", what()}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return json{{"error", e}};
}

namespace {

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

ApiError wrong_type(const std::string& key, const char* want, const json& v) {
  return bad_request("'" + key + "' must be " + want + ", got " + type_name(v), key);
}

double number(const json& body, const std::string& key, double lo, double hi, double def) {
  if (!body.contains(key) || body[key].is_null()) return def;
  const json& v = body[key];
  if (!v.is_number()) throw wrong_type(key, "a number", v);
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi))
    throw bad_request("'" + key + "' must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], got " + v.dump(),
                      key);
  return x;
}

std::optional<int64_t> integer(const json& body, const std::string& key, int64_t lo, int64_t hi) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  const json& v = body[key];
  if (!v.is_number_integer()) throw wrong_type(key, "an integer", v);
  const bool out = v.is_number_unsigned() ? (v.get<uint64_t>() > uint64_t(hi) || (lo > 0 && v.get<uint64_t>() < uint64_t(lo)))
                                         : (v.get<int64_t>() < lo || v.get<int64_t>() > hi);
  if (out)
    throw bad_request("'" + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                          v.dump(),
                      key);
  return v.get<int64_t>();
}

bool boolean(const json& body, const std::string& key) {
  if (!body.contains(key) || body[key].is_null()) return false;
  if (!body[key].is_boolean()) throw wrong_type(key, "a boolean", body[key]);
  return body[key].get<bool>();
}

std::vector<uint32_t> id_list(const json& v) {
  std::vector<uint32_t> ids;
  for (const json& x : v) {
    if (!x.is_number_integer() || (x.is_number_integer() && !x.is_number_unsigned() && x.get<int64_t>() < 0) ||
        x.get<uint64_t>() > 0xFFFFFFFFull)
      throw bad_request("'prompt' as token ids must hold integers in [0, 2^32), got " + x.dump(), "prompt");
    ids.push_back(x.get<uint32_t>());
  }
  return ids;
}

void parse_prompt(const json& body, CompletionRequest& r) {
  if (!body.contains("prompt")) throw bad_request("'prompt' is required", "prompt");
  const json& p = body["prompt"];
  if (p.is_string()) {
    r.prompt_text = p.get<std::string>();
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    r.prompt_ids = id_list(p);
  } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    r.prompt_text = p[0].get<std::string>();
  } else if (p.is_array() && p.size() == 1 && p[0].is_array()) {
    r.prompt_ids = id_list(p[0]);
  } else if (p.is_array() && p.size() > 1) {
    throw bad_request("'prompt' as a list of several prompts is not supported; send one per request", "prompt");
  } else if (p.is_array() && p.empty()) {
    throw bad_request("'prompt' is empty", "prompt");
  } else {
    throw bad_request("'prompt' must be a string or a list of token ids, got " + std::string(type_name(p)), "prompt");
  }
  if ((r.prompt_text && r.prompt_text->empty()) || (r.prompt_ids && r.prompt_ids->empty()))
    throw bad_request("'prompt' is empty", "prompt");
}

// A message's content: a string, or a list of {"type": "text", "text"} parts.
std::string message_content(const json& m, size_t i) {
  const std::string key = "messages[" + std::to_string(i) + "].content";
  if (!m.contains("content") || m["content"].is_null()) return "";
  const json& c = m["content"];
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw wrong_type(key, "a string or a list of text parts", c);
  std::string text;
  for (const json& part : c) {
    const auto is_text = [&part](const char* key) { return part.contains(key) && part[key].is_string(); };
    if (!part.is_object() || !is_text("type") || part["type"] != "text" || !is_text("text"))
      throw bad_request("'" + key + "' parts must be {\"type\": \"text\", \"text\": ...}", key);
    text += part["text"].get<std::string>();
  }
  return text;
}

void parse_messages(const json& body, CompletionRequest& r) {
  if (!body.contains("messages")) throw bad_request("'messages' is required", "messages");
  const json& ms = body["messages"];
  if (!ms.is_array()) throw wrong_type("messages", "an array", ms);
  if (ms.empty()) throw bad_request("'messages' is empty", "messages");
  r.messages = nlohmann::ordered_json::array();
  for (size_t i = 0; i < ms.size(); ++i) {
    const json& m = ms[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw wrong_type(at, "an object", m);
    if (!m.contains("role") || !m["role"].is_string())
      throw bad_request("'" + at + ".role' must be a string", at + ".role");
    r.messages.push_back({{"role", m["role"]}, {"content", message_content(m, i)}});
  }
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& text, bool chat) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number past double's range (out_of_range)
    throw bad_request(std::string("the body is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) throw bad_request("the body must be a JSON object, got " + std::string(type_name(body)));
  CompletionRequest r;
  r.chat = chat;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) throw wrong_type("model", "a string", body["model"]);
    r.model = body["model"].get<std::string>();
  }
  if (chat) parse_messages(body, r);
  else parse_prompt(body, r);
  // max_completion_tokens is the newer name of max_tokens in chat.
  r.max_tokens = integer(body, chat && body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens",
                         0, 1 << 30);
  r.temperature = float(number(body, "temperature", 0.0, 2.0, 1.0));
  r.top_p = float(number(body, "top_p", 0.0, 1.0, 1.0));
  if (r.top_p <= 0.0f) throw bad_request("'top_p' must be in (0, 1], got " + body["top_p"].dump(), "top_p");
  r.top_k = integer(body, "top_k", 0, 1 << 30).value_or(0);
  if (auto s = integer(body, "seed", INT64_MIN, INT64_MAX)) r.seed = uint64_t(*s);
  r.n = integer(body, "n", 1, 16).value_or(1);
  r.stream = boolean(body, "stream");
  r.echo = !chat && boolean(body, "echo");
  if (body.contains("stop") && !body["stop"].is_null()) {
    const json& s = body["stop"];
    if (s.is_string()) r.stop = {s.get<std::string>()};
    else if (s.is_array()) {
      for (const json& x : s) {
        if (!x.is_string()) throw bad_request("'stop' must be a string or a list of strings", "stop");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      throw wrong_type("stop", "a string or a list of strings", s);
    }
    if (r.stop.size() > 4) throw bad_request("'stop' takes at most 4 strings", "stop");
    for (const auto& x : r.stop)
      if (x.empty()) throw bad_request("'stop' strings must not be empty", "stop");
  }
  if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    const json& so = body["stream_options"];
    if (!so.is_object()) throw wrong_type("stream_options", "an object", so);
    if (!r.stream) throw bad_request("'stream_options' needs 'stream': true", "stream_options");
    r.include_usage = boolean(so, "include_usage");
  }
  if (body.contains("logprobs") && !body["logprobs"].is_null() && body["logprobs"] != false)
    throw bad_request("'logprobs' is not supported", "logprobs");
  return r;
}

}  // namespace forge::serve
