// Whether the client of a request handled by cpp-httplib has closed its
// connection, without writing to it: a non-streamed request writes nothing
// until it is done, so a failed write cannot tell (as it does for a stream).
// httplib (0.11) does not hand its handlers the socket; it is found among
// the process's sockets by the connection's two addresses. A client that
// only shuts down its sending side counts as gone (HTTP clients do not).
// Linux: the sockets are listed from /proc/self/fd.
#pragma once
#include <httplib.h>

namespace forge::cli {

class PeerWatch {
 public:
  explicit PeerWatch(const httplib::Request& req);
  // True once the peer has closed (or reset) the connection. False when the
  // socket was not found (nothing to watch).
  bool closed() const;

 private:
  int fd_ = -1;
};

}  // namespace forge::cli
