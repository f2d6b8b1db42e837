#include "serve_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace forge::cli {

namespace {

// The address and port of a socket end, as httplib writes them in a Request.
bool endpoint(const sockaddr_storage& a, std::string* addr, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &v4.sin_addr, buf, sizeof buf);
    *port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, buf, sizeof buf);
    *port = ntohs(v6.sin6_port);
  } else {
    return false;
  }
  *addr = buf;
  return true;
}

bool matches(int fd, const httplib::Request& req) {
  sockaddr_storage peer{}, local{};
  socklen_t pl = sizeof peer, ll = sizeof local;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) return false;
  std::string pa, la;
  int pp = -1, lp = -1;
  if (!endpoint(peer, &pa, &pp) || !endpoint(local, &la, &lp)) return false;
  return pp == req.remote_port && pa == req.remote_addr && lp == req.local_port;
}

}  // namespace

PeerWatch::PeerWatch(const httplib::Request& req) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const int fd = std::atoi(e.path().filename().c_str());
    if (fd > 2 && matches(fd, req)) {
      fd_ = fd;
      return;
    }
  }
}

bool PeerWatch::closed() const {
  if (fd_ < 0) return false;
  char c;
  const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // an orderly close: no more bytes will come
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // a reset
}

}  // namespace forge::cli
