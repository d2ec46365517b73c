//===- Npy.cpp - Read and write .npy files --------------------------------===//

#include "runtime/PlanNpy.h"

#include <cstdio>
#include <cstring>
#include <fstream>

using namespace spmd;
using namespace spmd::plan;

namespace {
const char *descrOf(ElemType type) {
  switch (type) {
  case ElemType::F32:
  case ElemType::BF16:
    return "<f4";
  case ElemType::F64:
    return "<f8";
  case ElemType::F16:
    return "<f2";
  case ElemType::I32:
    return "<i4";
  case ElemType::I64:
    return "<i8";
  case ElemType::I8:
    return "|i1";
  }
  return "?";
}

/// The value of `'key': VALUE` in the header dict, up to `end` chars.
std::string field(const std::string &header, const std::string &key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return "";
  at = header.find(':', at);
  if (at == std::string::npos)
    return "";
  ++at;
  while (at < header.size() && header[at] == ' ')
    ++at;
  if (at >= header.size())
    return "";
  char open = header[at];
  char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
  size_t end = header.find(close, at + 1);
  if (end == std::string::npos)
    return "";
  return header.substr(at, end - at + (close == ',' ? 0 : 1));
}
} // namespace

std::string plan::readNpy(const std::string &path, NpyArray &array) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return path + ": cannot open file";
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return path + ": not a .npy file (bad magic)";
  uint32_t headerLen = 0;
  if (magic[6] == 1) {
    unsigned char len[2];
    if (!in.read(reinterpret_cast<char *>(len), 2))
      return path + ": truncated header";
    headerLen = len[0] | (len[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char len[4];
    if (!in.read(reinterpret_cast<char *>(len), 4))
      return path + ": truncated header";
    headerLen = len[0] | (len[1] << 8) | (len[2] << 16) |
                (static_cast<uint32_t>(len[3]) << 24);
  } else {
    return path + ": unsupported .npy version " + std::to_string(magic[6]);
  }
  if (headerLen > (1u << 20))
    return path + ": header too long";
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen))
    return path + ": truncated header";
  std::string descr = field(header, "descr");
  if (descr == "'<f4'")
    array.type = ElemType::F32;
  else if (descr == "'<f8'")
    array.type = ElemType::F64;
  else if (descr == "'<f2'")
    array.type = ElemType::F16;
  else if (descr == "'<i4'")
    array.type = ElemType::I32;
  else if (descr == "'<i8'")
    array.type = ElemType::I64;
  else if (descr == "'|i1'")
    array.type = ElemType::I8;
  else
    return path + ": unsupported dtype " +
           (descr.empty() ? std::string("(missing)") : descr);
  if (field(header, "fortran_order") != "True" &&
      field(header, "fortran_order") != "False")
    return path + ": malformed header (fortran_order)";
  if (field(header, "fortran_order") == "True")
    return path + ": Fortran-order arrays are not supported";
  std::string shape = field(header, "shape");
  if (shape.size() < 2 || shape.front() != '(')
    return path + ": malformed header (shape)";
  array.shape.clear();
  const char *p = shape.c_str() + 1;
  while (*p && *p != ')') {
    while (*p == ' ' || *p == ',')
      ++p;
    if (*p == ')')
      break;
    char *end = nullptr;
    long long v = std::strtoll(p, &end, 10);
    if (end == p || v < 0)
      return path + ": malformed header (shape " + shape + ")";
    array.shape.push_back(v);
    p = end;
  }
  size_t bytes =
      static_cast<size_t>(numElements(array.shape)) * elemSize(array.type);
  array.data.assign(bytes, 0);
  if (bytes && !in.read(array.data.data(), static_cast<std::streamsize>(bytes)))
    return path + ": truncated data (expected " + std::to_string(bytes) +
           " bytes for shape " + shapeStr(array.shape) + ")";
  return "";
}

std::string plan::writeNpy(const std::string &path, const NpyArray &array) {
  std::string shape = "(";
  for (int64_t d : array.shape)
    shape += std::to_string(d) + ",";
  if (array.shape.size() > 1)
    shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + descrOf(array.type) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    return path + ": cannot create file";
  out.write("\x93NUMPY\x01\x00", 8);
  unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                          static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<char *>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (array.type == ElemType::BF16) { // widened: NumPy has no bf16
    for (int64_t i = 0; i < numElements(array.shape); ++i) {
      float f =
          static_cast<float>(loadElement(array.data.data(), array.type, i));
      out.write(reinterpret_cast<char *>(&f), 4);
    }
  } else {
    out.write(array.data.data(),
              static_cast<std::streamsize>(array.data.size()));
  }
  return out ? "" : path + ": write failed";
}
