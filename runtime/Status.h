//===- Status.h - Success or an error message ------------------*- C++ -*-===//
//
// The runtime is built without exceptions (LLVM's flags), so every fallible
// call returns a Status: ok, or an error whose message says what failed and
// why.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_STATUS_H
#define SPMD_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace spmd {

class [[nodiscard]] Status {
public:
  static Status success() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.text = std::move(message);
    return s;
  }
  bool ok() const { return !failed; }
  const std::string &message() const { return text; }

private:
  bool failed = false;
  std::string text;
};

} // namespace spmd

#endif // SPMD_RUNTIME_STATUS_H
