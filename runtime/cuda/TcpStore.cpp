//===- TcpStore.cpp - Hand a small blob from rank 0 to every rank ---------===//

#include "runtime/cuda/TcpStore.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace spmd {
namespace cuda {

namespace {

using Clock = std::chrono::steady_clock;

int msLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - Clock::now())
                  .count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// Full send/recv with the deadline; false on error or timeout.
bool sendAll(int fd, const char *p, size_t n, Clock::time_point deadline) {
  while (n) {
    pollfd pfd{fd, POLLOUT, 0};
    if (poll(&pfd, 1, msLeft(deadline)) <= 0)
      return false;
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) {
      if (k < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      return false;
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}
bool recvAll(int fd, char *p, size_t n, Clock::time_point deadline) {
  while (n) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, msLeft(deadline)) <= 0)
      return false;
    ssize_t k = ::recv(fd, p, n, 0);
    if (k <= 0) {
      if (k < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      return false;
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

Clock::time_point deadlineIn(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

bool parseInt(const char *text, int &out) {
  if (!text || !*text)
    return false;
  char *end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end || v < 0 || v > 1 << 30)
    return false;
  out = static_cast<int>(v);
  return true;
}

} // namespace

Status serveBlob(int port, const std::string &blob, int clients,
                 double timeoutSeconds) {
  auto deadline = deadlineIn(timeoutSeconds);
  std::string where = "rendezvous server on port " + std::to_string(port);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return Status::error(where + ": socket: " + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) < 0 ||
      ::listen(fd, 128) < 0) {
    std::string err = std::strerror(errno);
    ::close(fd);
    return Status::error(where + ": cannot listen: " + err);
  }
  uint64_t size = blob.size();
  for (int served = 0; served < clients;) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, msLeft(deadline)) <= 0) {
      ::close(fd);
      return Status::error(where + ": only " + std::to_string(served) + " of " +
                           std::to_string(clients) +
                           " ranks connected within " +
                           std::to_string(timeoutSeconds) + " s");
    }
    int c = ::accept(fd, nullptr, nullptr);
    if (c < 0)
      continue;
    int32_t rank = -1;
    bool ok =
        recvAll(c, reinterpret_cast<char *>(&rank), sizeof rank, deadline) &&
        sendAll(c, reinterpret_cast<const char *>(&size), sizeof size,
                deadline) &&
        sendAll(c, blob.data(), blob.size(), deadline);
    ::close(c);
    if (ok)
      ++served;
  }
  ::close(fd);
  return Status::success();
}

Status fetchBlob(const std::string &host, int port, int rank, size_t size,
                 double timeoutSeconds, std::string &blob) {
  auto deadline = deadlineIn(timeoutSeconds);
  std::string where = "rank " + std::to_string(rank) + " fetching from " +
                      host + ":" + std::to_string(port);
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  int gai =
      getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0)
    return Status::error(where + ": cannot resolve " + host + ": " +
                         gai_strerror(gai));
  std::string lastError = "timed out";
  while (true) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      int32_t r = rank;
      uint64_t got = 0;
      bool ok =
          sendAll(fd, reinterpret_cast<const char *>(&r), sizeof r, deadline) &&
          recvAll(fd, reinterpret_cast<char *>(&got), sizeof got, deadline);
      if (ok && got != size) {
        ::close(fd);
        freeaddrinfo(res);
        return Status::error(where + ": the server sends " +
                             std::to_string(got) + " bytes, expected " +
                             std::to_string(size));
      }
      blob.assign(size, '\0');
      ok = ok && recvAll(fd, &blob[0], size, deadline);
      ::close(fd);
      if (ok) {
        freeaddrinfo(res);
        return Status::success();
      }
      lastError = "connection dropped";
    } else {
      lastError = std::strerror(errno);
      if (fd >= 0)
        ::close(fd);
    }
    if (msLeft(deadline) == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  freeaddrinfo(res);
  return Status::error(where + ": no answer within " +
                       std::to_string(timeoutSeconds) + " s (" + lastError +
                       "); is rank 0 running?");
}

Status readLaunchEnv(LaunchEnv &env) {
  const char *rank = std::getenv("RANK"), *world = std::getenv("WORLD_SIZE");
  if (!parseInt(rank, env.rank))
    return Status::error(std::string("RANK is ") +
                         (rank ? "'" + std::string(rank) + "'" : "not set") +
                         "; the environment bootstrap needs RANK and "
                         "WORLD_SIZE (as torchrun sets them)");
  if (!parseInt(world, env.worldSize) || env.worldSize < 1)
    return Status::error(std::string("WORLD_SIZE is ") +
                         (world ? "'" + std::string(world) + "'" : "not set"));
  if (env.rank >= env.worldSize)
    return Status::error("RANK " + std::to_string(env.rank) +
                         " is not below WORLD_SIZE " +
                         std::to_string(env.worldSize));
  const char *local = std::getenv("LOCAL_RANK");
  env.localRank = env.rank;
  if (local && !parseInt(local, env.localRank))
    return Status::error("LOCAL_RANK is '" + std::string(local) + "'");
  if (const char *a = std::getenv("MASTER_ADDR"); a && *a)
    env.masterAddr = a;
  const char *port = std::getenv("MASTER_PORT");
  if (port && (!parseInt(port, env.masterPort) || env.masterPort > 65535))
    return Status::error("MASTER_PORT is '" + std::string(port) + "'");
  return Status::success();
}

Status shareFromRankZero(const LaunchEnv &env, std::string &blob,
                         double timeoutSeconds) {
  if (env.worldSize == 1)
    return Status::success();
  if (env.rank == 0)
    return serveBlob(env.masterPort, blob, env.worldSize - 1, timeoutSeconds);
  size_t size = blob.size();
  return fetchBlob(env.masterAddr, env.masterPort, env.rank, size,
                   timeoutSeconds, blob);
}

} // namespace cuda
} // namespace spmd
