// An error answered to an HTTP client in OpenAI's shape:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": null}}
#pragma once
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace forge::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}
  int status;        // 400, 401, 404, 413, 503, ...
  std::string type;  // "invalid_request_error", "authentication_error", "server_error", ...
  std::string param, code;

  nlohmann::json body() const;
};

// A 400 invalid_request_error naming the parameter.
inline ApiError bad_request(const std::string& message, const std::string& param = {}) {
  return ApiError(400, "invalid_request_error", message, param);
}

}  // namespace forge::serve
