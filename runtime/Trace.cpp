//===- Trace.cpp - Timelines of executed steps ----------------------------===//

#include "runtime/Trace.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

namespace spmd::plan {

namespace {
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      continue;
    out += c;
  }
  return out + "\"";
}

std::string fixed3(double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", value);
  return buf;
}
} // namespace

const char *traceCategory(StepKind kind) {
  bool local = kind == StepKind::Kernel || kind == StepKind::Gemm ||
               kind == StepKind::Copy;
  return local ? stepKindName(kind) : "collective";
}

std::string writeChromeTrace(const std::string &path,
                             const std::vector<std::vector<TraceEvent>> &events,
                             const std::vector<int64_t> &ranks) {
  std::ofstream os(path);
  if (!os)
    return "cannot write '" + path + "': " + std::strerror(errno);
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  // A track per rank; a GPU rank's communication stream gets a track of
  // its own (tid kCommTrack + rank).
  constexpr int64_t kCommTrack = 1 << 20;
  auto track = [&](int64_t tid, const std::string &name) {
    os << (first ? "" : ",\n") << "{\"name\": \"thread_name\", \"ph\": "
       << "\"M\", \"pid\": 0, \"tid\": " << tid << ", \"args\": {\"name\": \""
       << name << "\"}}";
    first = false;
  };
  for (int64_t d : ranks) {
    bool streams = std::any_of(events[d].begin(), events[d].end(),
                               [](const TraceEvent &e) { return e.stream; });
    track(d, "rank " + std::to_string(d) + (streams ? " compute" : ""));
    if (streams)
      track(kCommTrack + d, "rank " + std::to_string(d) + " communication");
    for (const TraceEvent &e : events[d])
      os << ",\n{\"name\": " << jsonString(e.name) << ", \"cat\": \""
         << traceCategory(e.kind)
         << "\", \"ph\": \"X\", \"ts\": " << fixed3(e.startUs)
         << ", \"dur\": " << fixed3(e.durationUs)
         << ", \"pid\": 0, \"tid\": " << (e.stream ? kCommTrack + d : d)
         << ", \"args\": {\"step\": " << e.step
         << ", \"detail\": " << jsonString(e.detail) << "}}";
  }
  os << "\n]}\n";
  os.close();
  if (!os)
    return "cannot write '" + path + "': " + std::strerror(errno);
  return "";
}

std::string profileSummary(const std::vector<TraceEvent> &events, int64_t steps,
                           int64_t rank, size_t topKernels) {
  std::map<std::string, std::pair<double, int64_t>> byKind, byKernel;
  double total = 0;
  for (const TraceEvent &e : events) {
    auto &k = byKind[traceCategory(e.kind)];
    k.first += e.durationUs;
    ++k.second;
    if (e.kind == StepKind::Kernel) {
      auto &n = byKernel[e.name];
      n.first += e.durationUs;
      ++n.second;
    }
    total += e.durationUs;
  }
  char line[256];
  std::snprintf(line, sizeof(line),
                "profile of rank %lld over %lld step(s): %.3f ms in steps\n",
                (long long)rank, (long long)steps, total / 1000);
  std::string out = line;
  for (auto &[kind, v] : byKind) {
    std::snprintf(line, sizeof(line), "  %-10s %6lld steps %10.3f ms %5.1f%%\n",
                  kind.c_str(), (long long)v.second, v.first / 1000,
                  total > 0 ? 100 * v.first / total : 0.0);
    out += line;
  }
  std::vector<std::pair<std::string, std::pair<double, int64_t>>> kernels(
      byKernel.begin(), byKernel.end());
  std::sort(kernels.begin(), kernels.end(), [](const auto &a, const auto &b) {
    return a.second.first > b.second.first;
  });
  if (kernels.size() > topKernels)
    kernels.resize(topKernels);
  for (auto &[name, v] : kernels) {
    std::snprintf(line, sizeof(line),
                  "  top kernel %-28s %6lld runs %10.3f ms\n", name.c_str(),
                  (long long)v.second, v.first / 1000);
    out += line;
  }
  return out;
}

} // namespace spmd::plan
