//===- ShardingRule.cpp - The factor model of an op's sharding ------------===//

#include "rules/ShardingRule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace spmd;
using llvm::ArrayRef;

ShardingRule ShardingRule::empty(ArrayRef<std::optional<int64_t>> operandRanks,
                                 ArrayRef<std::optional<int64_t>> resultRanks) {
  ShardingRule rule;
  rule.numOperands = operandRanks.size();
  for (std::optional<int64_t> rank :
       llvm::concat<const std::optional<int64_t>>(operandRanks, resultRanks))
    rule.slotDims.push_back(
        rank ? std::optional(llvm::SmallVector<int>(*rank, -1)) : std::nullopt);
  rule.initOf.assign(operandRanks.size(), -1);
  rule.resultCombiner.assign(resultRanks.size(), std::nullopt);
  return rule;
}

int ShardingRule::factorOf(unsigned slot, int64_t dim) const {
  const auto &dims = slotDims[slot];
  if (!dims || dim < 0 || dim >= int64_t(dims->size()))
    return -1;
  return (*dims)[dim];
}

int64_t ShardingRule::dimOf(unsigned slot, int factor) const {
  if (!slotDims[slot])
    return -1;
  for (auto [d, f] : llvm::enumerate(*slotDims[slot]))
    if (f == factor)
      return d;
  return -1;
}

Placement ShardingRule::shardPlacement(unsigned slot, int factor) const {
  if (int64_t d = dimOf(slot, factor); d >= 0)
    return Placement::shard(d);
  if (factors[factor].kind == Factor::Kind::Reduction) {
    int result = resultOf(slot);
    if (result >= 0 && resultCombiner[result])
      return Placement::partial(*resultCombiner[result]);
  }
  return Placement::replicate();
}

bool ShardingRule::splitOk(int factor, const Mesh &mesh,
                           ArrayRef<int64_t> axes) const {
  const Factor &f = factors[factor];
  if (f.kind == Factor::Kind::NeedReplication)
    return false;
  if (!f.reshape)
    return true;
  // Compares every device's range of both dims.
  std::vector<int64_t> splits;
  for (int64_t a : axes)
    splits.push_back(mesh.axisSizes[a]);
  std::vector<int64_t> indices(splits.size(), 0);
  while (true) {
    Range whole = nestedChunkRange(f.size, splits, indices);
    Range outer = nestedChunkRange(f.outerSize, splits, indices);
    if (whole.offset != outer.offset * f.innerSize ||
        whole.size != outer.size * f.innerSize)
      return false;
    size_t i = indices.size();
    while (i > 0 && ++indices[i - 1] == splits[i - 1])
      indices[--i] = 0;
    if (i == 0)
      return true;
  }
}

std::string ShardingRule::factorName(int f) {
  static const char letters[] = "ijklmnopqrstuvwxyzabcdefgh";
  if (f >= 0 && f < 26)
    return std::string(1, letters[f]);
  return "f" + std::to_string(f);
}

static void printSize(llvm::raw_ostream &os, int64_t size) {
  if (size < 0)
    os << '?';
  else
    os << size;
}

void ShardingRule::print(llvm::raw_ostream &os) const {
  auto printSlots = [&](unsigned begin, unsigned end) {
    os << '(';
    for (unsigned s = begin; s < end; ++s) {
      if (s != begin)
        os << ", ";
      if (!slotDims[s]) {
        os << '_';
        continue;
      }
      os << '[';
      llvm::interleaveComma(*slotDims[s], os, [&](int f) {
        os << (f < 0 ? std::string("-") : factorName(f));
      });
      os << ']';
    }
    os << ')';
  };
  printSlots(0, numOperands);
  os << " -> ";
  printSlots(numOperands, numSlots());
  os << " {";
  llvm::interleaveComma(llvm::seq<int>(0, factors.size()), os, [&](int f) {
    os << factorName(f) << '=';
    printSize(os, factors[f].size);
  });
  os << '}';

  auto factorsOf = [&](Factor::Kind kind) {
    llvm::SmallVector<int> out;
    for (auto [f, factor] : llvm::enumerate(factors))
      if (factor.kind == kind)
        out.push_back(f);
    return out;
  };
  if (llvm::SmallVector<int> red = factorsOf(Factor::Kind::Reduction);
      !red.empty()) {
    os << " reduction={";
    llvm::interleaveComma(red, os, [&](int f) {
      os << factorName(f) << ": ";
      llvm::interleave(
          resultCombiner, os,
          [&](const std::optional<ReduceKind> &k) {
            os << (k ? reduceKindName(*k) : "?");
          },
          ",");
    });
    os << '}';
  }
  if (llvm::SmallVector<int> rep = factorsOf(Factor::Kind::NeedReplication);
      !rep.empty()) {
    os << " need_replication={";
    llvm::interleaveComma(rep, os, [&](int f) { os << factorName(f); });
    os << '}';
  }
  if (llvm::any_of(factors, [](const Factor &f) { return f.reshape; })) {
    os << " reshape={";
    bool first = true;
    for (auto [f, factor] : llvm::enumerate(factors)) {
      if (!factor.reshape)
        continue;
      os << (first ? "" : ", ") << factorName(f) << ": ";
      printSize(os, factor.size);
      os << '=';
      printSize(os, factor.outerSize);
      os << '*' << factor.innerSize;
      first = false;
    }
    os << '}';
  }
  if (llvm::any_of(initOf, [](int r) { return r >= 0; })) {
    os << " init={";
    bool first = true;
    for (auto [o, r] : llvm::enumerate(initOf)) {
      if (r < 0)
        continue;
      os << (first ? "" : ", ") << o << "->" << r;
      first = false;
    }
    os << '}';
  }
  if (!alts.empty()) {
    os << " partial={";
    llvm::interleave(
        alts, os,
        [&](const PartialAlt &alt) {
          os << '(';
          llvm::interleaveComma(alt.operands, os);
          os << "): ";
          llvm::interleave(
              alt.kinds, os, [&](ReduceKind k) { os << reduceKindName(k); },
              "|");
        },
        "; ");
    os << '}';
  }
}
