//===- Npy.cpp - NumPy .npy files -----------------------------------------===//

#include "runtime/Npy.h"

#include "core/Checked.h"
#include "runtime/Memory.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace spmd {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct FileCloser {
  void operator()(FILE *f) const { std::fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

/// A tiny parser for the Python dict literal of a .npy header.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : s(text) {}

  Status parse(std::string &descr, bool &fortran, Shape &shape) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skip();
    if (!eat('{'))
      return error("expected '{'");
    while (true) {
      skip();
      if (eat('}'))
        break;
      std::string key;
      if (!parseString(key))
        return error("expected a quoted key");
      skip();
      if (!eat(':'))
        return error("expected ':' after '" + key + "'");
      skip();
      if (key == "descr") {
        if (!parseString(descr))
          return error("'descr' is not a string");
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (s.compare(pos, 4, "True") == 0) {
          fortran = true;
          pos += 4;
        } else if (s.compare(pos, 5, "False") == 0) {
          fortran = false;
          pos += 5;
        } else {
          return error("'fortran_order' is not True or False");
        }
        haveFortran = true;
      } else if (key == "shape") {
        if (Status st = parseShape(shape); !st.ok())
          return st;
        haveShape = true;
      } else {
        return error("unexpected key '" + key + "'");
      }
      skip();
      if (eat(','))
        continue;
      skip();
      if (eat('}'))
        break;
      return error("expected ',' or '}'");
    }
    skip();
    if (pos != s.size())
      return error("unexpected text after the dict");
    if (!haveDescr || !haveFortran || !haveShape)
      return error(std::string("missing key '") +
                   (!haveDescr     ? "descr"
                    : !haveFortran ? "fortran_order"
                                   : "shape") +
                   "'");
    return Status::success();
  }

private:
  Status error(const std::string &what) {
    return Status::error("bad header: " + what + " at offset " +
                         std::to_string(pos) + " in \"" + s + "\"");
  }
  void skip() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\n' ||
                              s[pos] == '\t' || s[pos] == '\r'))
      ++pos;
  }
  bool eat(char c) {
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool parseString(std::string &out) {
    if (pos >= s.size() || (s[pos] != '\'' && s[pos] != '"'))
      return false;
    char quote = s[pos++];
    size_t end = s.find(quote, pos);
    if (end == std::string::npos)
      return false;
    out = s.substr(pos, end - pos);
    pos = end + 1;
    return true;
  }
  Status parseShape(Shape &shape) {
    shape.clear();
    if (!eat('('))
      return error("'shape' is not a tuple");
    while (true) {
      skip();
      if (eat(')'))
        return Status::success();
      size_t start = pos;
      int64_t v = 0;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
        if (v > (INT64_MAX - 9) / 10)
          return error("dimension too large");
        v = v * 10 + (s[pos++] - '0');
      }
      if (pos == start)
        return error("'shape' holds a non-integer");
      // Python 2 era files may write 3L.
      eat('L');
      shape.push_back(v);
      skip();
      if (eat(','))
        continue;
      skip();
      if (eat(')'))
        return Status::success();
      return error("expected ',' or ')' in 'shape'");
    }
  }

  const std::string &s;
  size_t pos = 0;
};

std::optional<DType> dtypeOfDescr(const std::string &descr) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32,
                  DType::I64, DType::I8})
    if (descr == npyDescr(d))
      return d;
  if (descr == "|b1") // NumPy bool: one byte, 0 or 1
    return DType::I8;
  return std::nullopt;
}

Status fileError(const std::string &path, const std::string &what) {
  return Status::error("'" + path + "': " + what);
}

} // namespace

const char *npyDescr(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "<f4";
  case DType::F16:
    return "<f2";
  case DType::BF16:
    return "<u2";
  case DType::F64:
    return "<f8";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::I8:
    return "|i1";
  }
  return "?";
}

Status parseNpy(const std::string &name, const char *bytes, size_t size,
                NpyArray &array) {
  if (size < kMagicLen + 2 || std::memcmp(bytes, kMagic, kMagicLen) != 0)
    return fileError(name, "not a .npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  unsigned minor = static_cast<unsigned char>(bytes[7]);
  size_t lenBytes = major == 1 ? 2 : 4;
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return fileError(name, "unsupported .npy version " + std::to_string(major) +
                               "." + std::to_string(minor));
  if (size < 8 + lenBytes)
    return fileError(name, "truncated header");
  size_t headerLen = 0;
  for (size_t i = 0; i < lenBytes; ++i)
    headerLen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i]))
                 << (8 * i);
  size_t dataStart = 8 + lenBytes + headerLen;
  if (dataStart > size)
    return fileError(name, "truncated header (" + std::to_string(headerLen) +
                               " header bytes announced, " +
                               std::to_string(size - 8 - lenBytes) +
                               " present)");
  std::string header(bytes + 8 + lenBytes, headerLen);
  std::string descr;
  bool fortran = false;
  Shape shape;
  if (Status s = HeaderParser(header).parse(descr, fortran, shape); !s.ok())
    return fileError(name, s.message());
  std::optional<DType> dtype = dtypeOfDescr(descr);
  if (!dtype) {
    if (!descr.empty() && descr[0] == '>')
      return fileError(name,
                       "big-endian dtype '" + descr + "' is not supported");
    return fileError(name, "unsupported dtype '" + descr +
                               "' (supported: <f4, <f8, <f2, <i4, <i8, |i1, "
                               "|b1, and <u2 holding bf16 bits)");
  }
  if (fortran)
    return fileError(name, "Fortran-order arrays are not supported (save a "
                           "C-contiguous array)");
  // Callers count elements and bytes in int64: both must fit.
  std::optional<int64_t> bytesNeeded =
      checkedProduct(shape, static_cast<int64_t>(dtypeSize(*dtype)));
  if (!bytesNeeded)
    return fileError(name, "shape " + shapeStr(shape) +
                               " is too large: its byte size overflows int64");
  size_t need = static_cast<size_t>(*bytesNeeded);
  size_t have = size - dataStart;
  if (have < need)
    return fileError(name, "truncated data: shape " + shapeStr(shape) + " of " +
                               dtypeName(*dtype) + " needs " +
                               std::to_string(need) + " bytes, the file has " +
                               std::to_string(have));
  if (have > need)
    return fileError(name, std::to_string(have - need) +
                               " unexpected bytes after the data");
  array.dtype = *dtype;
  array.shape = std::move(shape);
  array.data.assign(bytes + dataStart, bytes + dataStart + need);
  return Status::success();
}

Status readNpy(const std::string &path, NpyArray &array) {
  errno = 0;
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever,
  // before the check below could refuse it. (Regular files ignore it.)
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fileError(path, std::string("cannot open: ") + std::strerror(errno));
  File f(::fdopen(fd, "rb"));
  if (!f) {
    ::close(fd);
    return fileError(path, std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat info;
  if (fstat(fd, &info) != 0)
    return fileError(path, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(info.st_mode))
    return fileError(path, "is a directory, not a .npy file");
  // A device or pipe may never end (/dev/zero): only regular files, whose
  // size is known before reading.
  if (!S_ISREG(info.st_mode))
    return fileError(path, "is not a regular file (a device, pipe or socket)");
  if (std::string err = checkMemory(info.st_size, "its contents"); !err.empty())
    return fileError(path, err);
  // One read of the whole file: inputs can be large.
  std::vector<char> bytes(static_cast<size_t>(info.st_size));
  bytes.resize(std::fread(bytes.data(), 1, bytes.size(), f.get()));
  if (std::ferror(f.get()))
    return fileError(path, std::string("read error: ") + std::strerror(errno));
  return parseNpy(path, bytes.data(), bytes.size(), array);
}

Status readNpyExpecting(const std::string &path, DType dtype,
                        const Shape &shape, NpyArray &array) {
  if (Status s = readNpy(path, array); !s.ok())
    return s;
  if (array.dtype != dtype)
    return fileError(path, std::string("dtype mismatch: the file holds ") +
                               dtypeName(array.dtype) + ", expected " +
                               dtypeName(dtype));
  if (array.shape != shape)
    return fileError(path, "shape mismatch: the file holds " +
                               shapeStr(array.shape) + ", expected " +
                               shapeStr(shape));
  return Status::success();
}

Status writeNpy(const std::string &path, DType dtype, const Shape &shape,
                const void *data) {
  std::string dict = std::string("{'descr': '") + npyDescr(dtype) +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0)
      return fileError(path, "cannot write negative shape " + shapeStr(shape));
    dict += (i ? ", " : "") + std::to_string(shape[i]);
  }
  // numpy writes "(3,)" and "(2, 3)".
  dict += shape.size() == 1 ? ",), }" : "), }";
  // Pad with spaces and a newline so the data starts 64-byte aligned; the
  // 2.0 format only when the header is too long for 1.0's 16-bit length.
  size_t prefix = 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 65535) {
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string head(kMagic, kMagicLen);
  size_t len = dict.size();
  if (prefix == 10) {
    head += '\x01';
    head += '\x00';
    head += static_cast<char>(len & 0xff);
    head += static_cast<char>(len >> 8);
  } else {
    head += '\x02';
    head += '\x00';
    for (int i = 0; i < 4; ++i)
      head += static_cast<char>((len >> (8 * i)) & 0xff);
  }
  head += dict;
  errno = 0;
  File f(std::fopen(path.c_str(), "wb"));
  if (!f)
    return fileError(path,
                     std::string("cannot create: ") + std::strerror(errno));
  size_t bytes = static_cast<size_t>(numElements(shape)) * dtypeSize(dtype);
  if (std::fwrite(head.data(), 1, head.size(), f.get()) != head.size() ||
      (bytes && std::fwrite(data, 1, bytes, f.get()) != bytes))
    return fileError(path, std::string("write error: ") + std::strerror(errno));
  if (std::fclose(f.release()) != 0)
    return fileError(path, std::string("write error: ") + std::strerror(errno));
  return Status::success();
}

} // namespace spmd
