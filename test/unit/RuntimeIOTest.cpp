//===- RuntimeIOTest.cpp - dtypes, block copies, .npy, layout scatter -----===//

#include "runtime/BlockOps.h"
#include "runtime/InProcessComm.h"
#include "runtime/Memory.h"
#include "runtime/Npy.h"
#include "runtime/Sharding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace spmd;

namespace {

//===----------------------------------------------------------------------===//
// 16-bit floats
//===----------------------------------------------------------------------===//

TEST(DType, HalfRoundTripsEveryValue) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = halfToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f))));
      continue;
    }
    ASSERT_EQ(floatToHalf(f), bits) << "bits " << bits;
  }
}

TEST(DType, HalfKnownValuesAndRounding) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00); // rounds up to Inf
  EXPECT_EQ(floatToHalf(1e9f), 0x7C00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie to even: 0
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002); // 1.5 ulp: to even
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
}

TEST(DType, BFloat16Rounding) {
  EXPECT_EQ(floatToBF16(1.0f), 0x3F80);
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(floatToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(floatToBF16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(NAN))));
  for (uint32_t bits = 0; bits < 0x10000; bits += 7) {
    float f = bf16ToFloat(static_cast<uint16_t>(bits));
    if (!std::isnan(f)) {
      ASSERT_EQ(floatToBF16(f), bits);
    }
  }
}

//===----------------------------------------------------------------------===//
// Block copies and reductions
//===----------------------------------------------------------------------===//

int64_t flat(const Shape &pos, const Shape &shape) {
  int64_t idx = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    idx = idx * shape[d] + pos[d];
  return idx;
}

TEST(BlockOps, CopyBoxMatchesElementwiseCopy) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    size_t rank = rng() % 4;
    Shape src(rank), dst(rank), box(rank), so(rank), dOff(rank);
    for (size_t d = 0; d < rank; ++d) {
      box[d] = rng() % 4;
      so[d] = rng() % 3;
      dOff[d] = rng() % 3;
      src[d] = box[d] + so[d] + rng() % 2;
      dst[d] = box[d] + dOff[d] + rng() % 2;
    }
    std::vector<int32_t> s(numElements(src)), got(numElements(dst), -1),
        want(numElements(dst), -1);
    for (size_t i = 0; i < s.size(); ++i)
      s[i] = static_cast<int32_t>(i);
    copyBox(got.data(), dst, dOff, s.data(), src, so, box, 4);
    for (int64_t k = 0; k < numElements(box); ++k) {
      Shape pos(rank);
      int64_t r = k;
      for (size_t d = rank; d-- > 0;) {
        pos[d] = r % box[d];
        r /= box[d];
      }
      Shape ps = pos, pd = pos;
      for (size_t d = 0; d < rank; ++d) {
        ps[d] += so[d];
        pd[d] += dOff[d];
      }
      want[flat(pd, dst)] = s[flat(ps, src)];
    }
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

TEST(BlockOps, ReduceInPlaceAndInF32) {
  // Half inputs whose sum is exact only in f32 accumulation order.
  uint16_t a[3] = {floatToHalf(2048), floatToHalf(1), floatToHalf(-3)};
  uint16_t b[3] = {floatToHalf(1), floatToHalf(1), floatToHalf(5)};
  uint16_t c[3] = {floatToHalf(-2048), floatToHalf(2), floatToHalf(-7)};
  const void *in[3] = {a, b, c};
  reduceBuffers(DType::F16, ReduceKind::Sum, in, 3, a, 3); // out aliases a
  EXPECT_EQ(halfToFloat(a[0]), 1.0f); // 2048 + 1 in f16 would round to 2048
  EXPECT_EQ(halfToFloat(a[1]), 4.0f);
  EXPECT_EQ(halfToFloat(a[2]), -5.0f);
  int32_t x[2] = {7, -7}, y[2] = {0, 0};
  const void *ints[2] = {x, y};
  reduceBuffers(DType::I32, ReduceKind::Avg, ints, 2, y, 2);
  EXPECT_EQ(y[0], 3); // truncates toward zero
  EXPECT_EQ(y[1], -3);
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

class Npy : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/spmd-npy-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string path(const std::string &name) { return dir + "/" + name; }
  void writeRaw(const std::string &name, const std::string &bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
  }
  /// A 1.0 file with the given header dict text and payload.
  std::string v1(const std::string &dict, const std::string &payload) {
    std::string h = dict + "\n";
    std::string s("\x93NUMPY\x01\x00", 8);
    s += static_cast<char>(h.size() & 0xff);
    s += static_cast<char>(h.size() >> 8);
    return s + h + payload;
  }
  std::string readError(const std::string &name) {
    NpyArray a;
    Status s = readNpy(path(name), a);
    return s.ok() ? "ok" : s.message();
  }
  static bool haveNumpy() {
    return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") ==
           0;
  }
  std::string dir;
};

TEST_F(Npy, RoundTripsEveryDTypeAndShape) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32,
                  DType::I64, DType::I8})
    for (Shape shape : {Shape{}, Shape{0}, Shape{5}, Shape{2, 3, 4},
                        Shape{0, 3}, Shape{1, 1, 1, 7}}) {
      int64_t n = numElements(shape);
      std::vector<char> data(n * dtypeSize(t));
      for (int64_t i = 0; i < n; ++i)
        storeFromDouble(data.data(), t, i, static_cast<double>(i % 9) - 4.5);
      std::string p = path(std::string(dtypeName(t)) + ".npy");
      ASSERT_TRUE(writeNpy(p, t, shape, data.data()).ok());
      NpyArray a;
      Status s = readNpyExpecting(p, t, shape, a);
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_EQ(a.data, data);
      // The data starts 64-byte aligned, as numpy writes it.
      std::ifstream f(p, std::ios::binary | std::ios::ate);
      EXPECT_EQ((static_cast<size_t>(f.tellg()) - data.size()) % 64, 0u);
    }
}

TEST_F(Npy, ReadsFilesWrittenByNumpy) {
  if (!haveNumpy())
    GTEST_SKIP() << "numpy is not available to /usr/bin/python3";
  std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "a = np.arange(24).reshape(2, 3, 4)\n"
      "np.save(d + '/f4.npy', (a - 5).astype('<f4') / 4)\n"
      "np.save(d + '/f8.npy', (a - 5).astype('<f8') / 3)\n"
      "np.save(d + '/f2.npy', (a - 5).astype('<f2') / 8)\n"
      "np.save(d + '/i4.npy', (a - 5).astype('<i4'))\n"
      "np.save(d + '/i8.npy', (a * 1000000000).astype('<i8'))\n"
      "np.save(d + '/i1.npy', (a - 5).astype('|i1'))\n"
      "np.save(d + '/b1.npy', a % 3 == 0)\n"
      "np.save(d + '/scalar.npy', np.float32(2.5))\n"
      "np.save(d + '/empty.npy', np.zeros((0, 3), '<f4'))\n"
      "np.save(d + '/fortran.npy', np.asfortranarray(a.astype('<f4')))\n"
      "np.save(d + '/c8.npy', a.astype('<c8'))\n"
      "np.save(d + '/be.npy', a.astype('>f4'))\n"
      "with open(d + '/v2.npy', 'wb') as f:\n"
      "    np.lib.format.write_array(f, a.astype('<f4'), version=(2, 0))\n";
  writeRaw("gen.py", script);
  std::string cmd = "/usr/bin/python3 '" + path("gen.py") + "' '" + dir + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  struct Expect {
    const char *file;
    DType dtype;
    double (*value)(int64_t);
  };
  Expect cases[] = {
      {"f4.npy", DType::F32, [](int64_t i) { return (i - 5) / 4.0; }},
      {"f8.npy", DType::F64, [](int64_t i) { return (i - 5) / 3.0; }},
      {"f2.npy", DType::F16, [](int64_t i) { return (i - 5) / 8.0; }},
      {"i4.npy", DType::I32, [](int64_t i) { return double(i - 5); }},
      {"i8.npy", DType::I64, [](int64_t i) { return i * 1e9; }},
      {"i1.npy", DType::I8, [](int64_t i) { return double(i - 5); }},
      {"b1.npy", DType::I8, [](int64_t i) { return double(i % 3 == 0); }},
      {"v2.npy", DType::F32, [](int64_t i) { return double(i); }},
  };
  for (const Expect &e : cases) {
    NpyArray a;
    Status s = readNpyExpecting(path(e.file), e.dtype, {2, 3, 4}, a);
    ASSERT_TRUE(s.ok()) << s.message();
    for (int64_t i = 0; i < 24; ++i)
      EXPECT_EQ(loadAsDouble(a.data.data(), e.dtype, i), e.value(i))
          << e.file << " element " << i;
  }
  NpyArray a;
  ASSERT_TRUE(readNpyExpecting(path("scalar.npy"), DType::F32, {}, a).ok());
  EXPECT_EQ(loadAsDouble(a.data.data(), DType::F32, 0), 2.5);
  ASSERT_TRUE(readNpyExpecting(path("empty.npy"), DType::F32, {0, 3}, a).ok());
  EXPECT_NE(readError("fortran.npy")
                .find("Fortran-order arrays are not "
                      "supported"),
            std::string::npos);
  EXPECT_NE(readError("c8.npy").find("unsupported dtype '<c8'"),
            std::string::npos);
  EXPECT_NE(readError("be.npy").find("big-endian dtype '>f4'"),
            std::string::npos);
}

TEST_F(Npy, NumpyReadsOurFiles) {
  if (!haveNumpy())
    GTEST_SKIP() << "numpy is not available to /usr/bin/python3";
  std::vector<float> f(6);
  std::vector<uint16_t> bf(6);
  for (int i = 0; i < 6; ++i) {
    f[i] = i * 0.5f - 1;
    bf[i] = floatToBF16(i * 0.25f);
  }
  ASSERT_TRUE(writeNpy(path("f.npy"), DType::F32, {2, 3}, f.data()).ok());
  ASSERT_TRUE(writeNpy(path("bf.npy"), DType::BF16, {6}, bf.data()).ok());
  int64_t scalar = -42;
  ASSERT_TRUE(writeNpy(path("s.npy"), DType::I64, {}, &scalar).ok());
  std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "a = np.load(d + '/f.npy')\n"
      "assert a.dtype == np.float32 and a.shape == (2, 3), (a.dtype, a.shape)\n"
      "assert (a == np.arange(6).reshape(2, 3) * 0.5 - 1).all(), a\n"
      "b = np.load(d + '/bf.npy')\n"
      "assert b.dtype == np.uint16 and b.shape == (6,)\n"
      "assert ((b.astype(np.uint32) << 16).view(np.float32) ==\n"
      "        np.arange(6) * 0.25).all()\n"
      "s = np.load(d + '/s.npy')\n"
      "assert s.shape == () and s.dtype == np.int64 and s == -42\n";
  writeRaw("check.py", script);
  std::string cmd =
      "/usr/bin/python3 '" + path("check.py") + "' '" + dir + "' 1>&2";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(Memory, CheckMemory) {
  EXPECT_EQ(checkMemory(1 << 20, "x", 1 << 30), "");
  EXPECT_EQ(checkMemory(int64_t(40) << 30, "argument 0", int64_t(16) << 30),
            "needs 40.0 GiB for argument 0, 16.0 GiB available");
  EXPECT_EQ(checkMemory(-1, "the arena", int64_t(16) << 30),
            "needs more than 2^63 bytes for the arena, 16.0 GiB available");
  EXPECT_GT(physicalMemoryBytes(), 0);
}

TEST_F(Npy, ErrorsNameTheFileAndTheProblem) {
  std::string f4(24, '\0');
  EXPECT_EQ(readError("missing.npy"), "'" + path("missing.npy") +
                                          "': cannot open: No such file or "
                                          "directory");
  EXPECT_EQ(readError(""), "'" + dir + "/': is a directory, not a .npy file");
  // Devices are not read: /dev/zero never ends.
  EXPECT_EQ(readNpy("/dev/null", *std::make_unique<NpyArray>()).message(),
            "'/dev/null': is not a regular file (a device, pipe or socket)");
  EXPECT_EQ(readNpy("/dev/zero", *std::make_unique<NpyArray>()).message(),
            "'/dev/zero': is not a regular file (a device, pipe or socket)");
  // Nor pipes: opening a FIFO without a writer used to wait forever.
  ASSERT_EQ(mkfifo(path("fifo.npy").c_str(), 0600), 0);
  EXPECT_EQ(readError("fifo.npy"), "'" + path("fifo.npy") +
                                       "': is not a regular file (a device, "
                                       "pipe or socket)");
  writeRaw("empty.npy", "");
  EXPECT_EQ(readError("empty.npy"),
            "'" + path("empty.npy") + "': not a .npy file (bad magic)");
  writeRaw("magic.npy", "PK\x03\x04 this is a zip");
  EXPECT_EQ(readError("magic.npy"),
            "'" + path("magic.npy") + "': not a .npy file (bad magic)");
  writeRaw("short.npy", "\x93NU");
  EXPECT_NE(readError("short.npy").find("bad magic"), std::string::npos);
  writeRaw("version.npy", std::string("\x93NUMPY\x04\x00\x10\x00", 10));
  EXPECT_NE(readError("version.npy").find("unsupported .npy version 4.0"),
            std::string::npos);
  std::string cut = v1("{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2, 3), }",
                       f4);
  writeRaw("cut-header.npy", cut.substr(0, 20));
  EXPECT_NE(readError("cut-header.npy").find("truncated header"),
            std::string::npos);
  writeRaw("garbage.npy", v1("{'descr': '<f4', 'fortran_order': False, "
                             "'shape': (2, x), }",
                             f4));
  EXPECT_NE(
      readError("garbage.npy").find("bad header: 'shape' holds a non-integer"),
      std::string::npos);
  writeRaw("nodict.npy", v1("[1, 2]", f4));
  EXPECT_NE(readError("nodict.npy").find("bad header: expected '{'"),
            std::string::npos);
  writeRaw("nokey.npy", v1("{'descr': '<f4', 'shape': (2, 3), }", f4));
  EXPECT_NE(readError("nokey.npy").find("missing key 'fortran_order'"),
            std::string::npos);
  writeRaw("extrakey.npy", v1("{'descr': '<f4', 'fortran_order': False, "
                              "'shape': (2, 3), 'x': 1}",
                              f4));
  EXPECT_NE(readError("extrakey.npy").find("unexpected key 'x'"),
            std::string::npos);
  writeRaw("dtype.npy", v1("{'descr': '<c16', 'fortran_order': False, "
                           "'shape': (2, 3), }",
                           f4));
  EXPECT_NE(readError("dtype.npy").find("unsupported dtype '<c16'"),
            std::string::npos);
  // 2^62 x 4 bytes wrap int64 (and the old size_t check let 2^62 x 2 i8
  // elements through, whose byte count overflows int64).
  writeRaw("huge.npy", v1("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (4611686018427387904, 4), }",
                          f4));
  EXPECT_EQ(readError("huge.npy"),
            "'" + path("huge.npy") +
                "': shape [4611686018427387904, 4] is too large: its byte "
                "size overflows int64");
  writeRaw("huge-i8.npy", v1("{'descr': '|i1', 'fortran_order': False, "
                             "'shape': (4611686018427387904, 2), }",
                             f4));
  EXPECT_NE(readError("huge-i8.npy").find("overflows int64"),
            std::string::npos);
  writeRaw("fortran.npy", v1("{'descr': '<f4', 'fortran_order': True, "
                             "'shape': (2, 3), }",
                             f4));
  EXPECT_NE(readError("fortran.npy").find("Fortran-order"), std::string::npos);
  writeRaw("truncated.npy", v1("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (2, 3), }",
                               f4.substr(0, 20)));
  EXPECT_EQ(readError("truncated.npy"),
            "'" + path("truncated.npy") +
                "': truncated data: shape [2, 3] of f32 needs 24 bytes, the "
                "file has 20");
  writeRaw("trailing.npy", v1("{'descr': '<f4', 'fortran_order': False, "
                              "'shape': (2, 3), }",
                              f4 + "xy"));
  EXPECT_NE(readError("trailing.npy").find("2 unexpected bytes after the data"),
            std::string::npos);
  // Well-formed, but not what the caller needs.
  writeRaw("good.npy", v1("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (2, 3), }",
                          f4));
  NpyArray a;
  EXPECT_EQ(readNpyExpecting(path("good.npy"), DType::F32, {3, 2}, a).message(),
            "'" + path("good.npy") +
                "': shape mismatch: the file holds [2, 3], expected [3, 2]");
  EXPECT_EQ(readNpyExpecting(path("good.npy"), DType::F64, {2, 3}, a).message(),
            "'" + path("good.npy") +
                "': dtype mismatch: the file holds f32, expected f64");
  EXPECT_NE(writeNpy(dir + "/no/such/dir/x.npy", DType::F32, {1}, f4.data())
                .message()
                .find("cannot create: No such file or directory"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Layout scatter / assemble
//===----------------------------------------------------------------------===//

Mesh mesh2x3() { return Mesh{{"dp", "tp"}, {2, 3}}; }

Layout layoutOf(std::initializer_list<const char *> placements) {
  Layout l;
  for (const char *p : placements)
    l.placements.push_back(*Placement::parse(p));
  return l;
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i * 3 % 17) - 5;
  return v;
}

TEST(Sharding, ScatterMatchesLocalRangesAndAssembleRoundTrips) {
  Mesh meshes[] = {mesh2x3(), Mesh{{"a", "b", "c"}, {2, 2, 2}}};
  std::vector<std::vector<const char *>> layouts2 = {
      {"R", "R"},         {"S(0)", "R"},        {"R", "S(1)"},
      {"S(0)", "S(0)"},   {"S(1)", "S(0)"},     {"P(sum)", "S(1)"},
      {"S(0)", "P(max)"}, {"P(avg)", "P(sum)"}, {"P(min)", "R"}};
  std::vector<std::vector<const char *>> layouts3 = {
      {"S(0)", "S(0)", "S(0)"},
      {"P(sum)", "S(1)", "P(sum)"},
      {"R", "P(max)", "S(0)"}};
  Shape globalShape{5, 7};
  std::vector<float> global = iota(35);
  for (const Mesh &mesh : meshes) {
    for (const auto &ps : mesh.rank() == 2 ? layouts2 : layouts3) {
      Layout layout;
      for (const char *p : ps)
        layout.placements.push_back(*Placement::parse(p));
      std::vector<std::vector<char>> blocks(mesh.numDevices());
      std::vector<const void *> ptrs;
      for (int64_t d = 0; d < mesh.numDevices(); ++d) {
        Shape shape;
        ASSERT_TRUE(scatterToLocal(mesh, layout, DType::F32, global.data(),
                                   globalShape, d, blocks[d], shape)
                        .ok());
        std::vector<int64_t> coords = mesh.coords(d);
        std::vector<Range> ranges =
            localRanges(mesh, layout, globalShape, coords);
        ASSERT_EQ(shape, (Shape{ranges[0].size, ranges[1].size}));
        bool zero = false;
        for (size_t a = 0; a < coords.size(); ++a)
          if (layout.placements[a].isPartial() &&
              layout.placements[a].reduce == ReduceKind::Sum && coords[a])
            zero = true;
        const float *b = reinterpret_cast<const float *>(blocks[d].data());
        for (int64_t i = 0; i < shape[0]; ++i)
          for (int64_t j = 0; j < shape[1]; ++j)
            ASSERT_EQ(
                b[i * shape[1] + j],
                zero
                    ? 0.0f
                    : global[(ranges[0].offset + i) * 7 + ranges[1].offset + j])
                << layout.str() << " device " << d;
        ptrs.push_back(blocks[d].data());
      }
      std::vector<float> back(35, 1234.5f);
      ASSERT_TRUE(assembleGlobal(mesh, layout, DType::F32, globalShape, ptrs,
                                 back.data())
                      .ok());
      EXPECT_EQ(back, global) << layout.str();
    }
  }
}

// Partial terms that differ per device: the assembly reduces them, the last
// partial mesh axis first.
TEST(Sharding, AssembleReducesPartialTerms) {
  Mesh mesh = mesh2x3();
  Layout layout = layoutOf({"P(max)", "P(sum)"});
  std::vector<std::vector<float>> blocks(6);
  std::vector<const void *> ptrs;
  for (int64_t d = 0; d < 6; ++d) {
    blocks[d] = {static_cast<float>(d), static_cast<float>(-d * d)};
    ptrs.push_back(blocks[d].data());
  }
  std::vector<float> out(2);
  ASSERT_TRUE(
      assembleGlobal(mesh, layout, DType::F32, {2}, ptrs, out.data()).ok());
  // Row sums: {0+1+2, 3+4+5} -> max 12; {0-1-4, -9-16-25} -> max -5.
  EXPECT_EQ(out, (std::vector<float>{12, -5}));
  Layout avg = layoutOf({"S(0)", "P(avg)"});
  std::vector<uint16_t> h[6];
  ptrs.clear();
  for (int64_t d = 0; d < 6; ++d) {
    h[d] = {floatToBF16(static_cast<float>(d))};
    ptrs.push_back(h[d].data());
  }
  uint16_t res[2];
  ASSERT_TRUE(assembleGlobal(mesh, avg, DType::BF16, {2}, ptrs, res).ok());
  EXPECT_EQ(bf16ToFloat(res[0]), 1.0f); // (0+1+2)/3
  EXPECT_EQ(bf16ToFloat(res[1]), 4.0f); // (3+4+5)/3
}

TEST(Sharding, Errors) {
  Mesh mesh = mesh2x3();
  std::vector<char> local;
  Shape shape;
  float g[4] = {0};
  EXPECT_EQ(scatterToLocal(mesh, layoutOf({"S(2)", "R"}), DType::F32, g, {4}, 0,
                           local, shape)
                .message(),
            "layout [S(2), R]: placement S(2) on mesh axis 'dp' shards dim 2 "
            "of a rank-1 tensor");
  EXPECT_EQ(
      scatterToLocal(mesh, layoutOf({"R"}), DType::F32, g, {4}, 0, local, shape)
          .message(),
      "layout [R]: layout has 1 placements but the mesh has 2 axes");
  EXPECT_NE(scatterToLocal(mesh, layoutOf({"R", "R"}), DType::F32, g, {4}, 6,
                           local, shape)
                .message()
                .find("device 6 is not in a mesh of 6"),
            std::string::npos);
  EXPECT_EQ(assembleGlobal(mesh, layoutOf({"R", "R"}), DType::F32, {4}, {g}, g)
                .message(),
            "assembling [R, R] needs 6 blocks, got 1");
}

// Scatter by a layout, then undo it with collectives: every rank ends up
// with the global array (communicators and layout arithmetic agree).
TEST(Sharding, CollectivesUndoTheScatter) {
  Mesh mesh = mesh2x3();
  Layout layout = layoutOf({"S(1)", "S(0)"});
  Shape globalShape{5, 7};
  std::vector<float> global = iota(35);
  InProcessWorld world(mesh, {10.0, /*verifyCollectives=*/true});
  std::mutex mu;
  std::vector<std::string> errors;
  world.run([&](InProcessComm &comm) {
    std::vector<char> local;
    Shape shape;
    auto fail = [&](const std::string &e) {
      std::lock_guard<std::mutex> lock(mu);
      errors.push_back("rank " + std::to_string(comm.device()) + ": " + e);
    };
    if (Status s = scatterToLocal(mesh, layout, DType::F32, global.data(),
                                  globalShape, comm.device(), local, shape);
        !s.ok())
      return fail(s.message());
    std::vector<float> rows(35), all(35);
    CollectiveResult r = comm.allGather({local.data(), DType::F32, shape},
                                        {rows.data(), 140}, {1}, 0);
    if (!r.ok())
      return fail(r.status.message());
    r = comm.allGather({rows.data(), DType::F32, r.shape}, {all.data(), 140},
                       {0}, 1);
    if (!r.ok())
      return fail(r.status.message());
    if (r.shape != globalShape || all != global)
      fail("gathered array differs from the global one");
  });
  EXPECT_TRUE(errors.empty()) << errors[0];
}

} // namespace
