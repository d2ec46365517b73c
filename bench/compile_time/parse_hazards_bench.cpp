// Times spmd-opt's pre-parse scan (core/ParseHazards.h) on one file: the
// best of 7 calls of findParseHazard. Built by hand, not by the project:
//
//   g++ -O2 -std=c++17 -I. bench/compile_time/parse_hazards_bench.cpp \
//       core/ParseHazards.cpp -o /tmp/ph && /tmp/ph FILE.mlir
#include "core/ParseHazards.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " FILE.mlir\n";
    return 2;
  }
  std::ifstream file(argv[1]);
  if (!file) {
    std::cerr << argv[0] << ": cannot read " << argv[1] << "\n";
    return 1;
  }
  std::stringstream text;
  text << file.rdbuf();
  const std::string source = text.str();
  double best = 1e30;
  bool hazard = false;
  for (int i = 0; i < 7; ++i) {
    auto begin = std::chrono::steady_clock::now();
    hazard = spmd::findParseHazard(source).has_value();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - begin)
                              .count());
  }
  std::cout << source.size() << " bytes, " << (hazard ? "a hazard" : "none")
            << ", best of 7: " << best * 1e3 << " ms\n";
  return 0;
}
