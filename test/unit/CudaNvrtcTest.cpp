//===- CudaNvrtcTest.cpp - NVRTC compiles every kernel, no GPU needed -----===//

#include "runtime/cuda/KernelSources.h"
#include "targets/cuda/Nvrtc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <unistd.h>

using namespace spmd::cuda;

namespace {

const char *kKernelNames[] = {
    "spmd_affine_gelu_f32_vec4",
    "spmd_affine_gelu_f32",
    "spmd_affine_gelu_f16",
    "spmd_affine_gelu_bf16",
    "spmd_softmax_fwd_f32",
    "spmd_softmax_fwd_f16",
    "spmd_softmax_fwd_bf16",
    "spmd_softmax_bwd_f32",
    "spmd_softmax_bwd_f16",
    "spmd_softmax_bwd_bf16",
    "spmd_layer_norm_fwd_f32",
    "spmd_layer_norm_fwd_f16",
    "spmd_layer_norm_fwd_bf16",
    "spmd_layer_norm_bwd_input_f32",
    "spmd_layer_norm_bwd_input_f16",
    "spmd_layer_norm_bwd_input_bf16",
    "spmd_layer_norm_bwd_params_f32",
    "spmd_layer_norm_bwd_params_f16",
    "spmd_layer_norm_bwd_params_bf16",
    "spmd_rms_norm_fwd_f32",
    "spmd_rms_norm_fwd_f16",
    "spmd_rms_norm_fwd_bf16",
    "spmd_cross_entropy_fwd_f32",
    "spmd_cross_entropy_fwd_f16",
    "spmd_cross_entropy_fwd_bf16",
    "spmd_layer_norm_bwd_params_partial_f32",
    "spmd_layer_norm_bwd_params_partial_bf16",
    "spmd_column_sum_f32",
    "spmd_column_sum_f16",
    "spmd_convert_f16_f32",
    "spmd_convert_f32_f16",
    "spmd_convert_bf16_f32",
    "spmd_convert_f32_bf16",
};

bool contains(const std::string &hay, const std::string &needle) {
  return hay.find(needle) != std::string::npos;
}

TEST(Nvrtc, CompilesEveryReferenceKernelForSm80AndSm90) {
  CompileOptions opts;
  opts.archs = {80, 90};
  opts.lineInfo = true;
  CompiledModule m;
  spmd::Status s =
      compileModule("reference_kernels.cu", referenceKernelsSource(), opts, m);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(m.cubins.size(), 2u);
  for (int arch : {80, 90}) {
    const std::string &cubin = m.cubins.at(arch);
    int got = 0;
    spmd::Status e = cubinArch(cubin, got);
    ASSERT_TRUE(e.ok()) << e.message();
    EXPECT_EQ(got, arch);
    // Every entry point is in the symbol table under its unmangled name.
    for (const char *k : kKernelNames)
      EXPECT_TRUE(contains(cubin, std::string(k) + '\0'))
          << k << " missing from the sm_" << arch << " cubin";
  }
  EXPECT_EQ(m.ptxArch, 80);
  EXPECT_TRUE(contains(m.ptx, ".target sm_80"));
  for (const char *k : kKernelNames)
    EXPECT_TRUE(contains(m.ptx, std::string(".entry ") + k)) << k;
  // The row reductions use warp shuffles, the loss an atomic add, the vec4
  // kernel 128-bit loads: the lowering really is what the source says.
  EXPECT_TRUE(contains(m.ptx, "shfl.sync.bfly"));
  EXPECT_TRUE(contains(m.ptx, "atom.global.add.f32") ||
              contains(m.ptx, "red.global.add.f32"));
  EXPECT_TRUE(contains(m.ptx, "ld.global.nc.v4.f32") ||
              contains(m.ptx, "ld.global.v4.f32"));
}

// What the code generator will print: a fused kernel over the library with
// a broadcast operand through StridedView.
const char *kGenerated = R"(
#include "spmd_kernels.cuh"
extern "C" __global__ void fused_add_mul_tanh(const spmdk::bf16 *a,
    const float *b, spmdk::bf16 *out, spmdk::StridedView bview, long long n) {
  spmdk::gridStride(n, [&](long long i) {
    float v = spmdk::load(a, i) + b[bview.offset(i)];
    spmdk::store(out, i, tanhf(v * 0.5f));
  });
}
)";

TEST(Nvrtc, CompilesGeneratedStyleSourceAndCaches) {
  // Counts misses of the memory cache alone: a disk cache named by
  // SPMD_NVRTC_CACHE would turn them into hits.
  setCacheDirectory("");
  clearMemoryCache();
  CompileOptions opts;
  std::string a, b;
  spmd::Status s = compileOne("gen.cu", kGenerated, 90, false, opts, a);
  ASSERT_TRUE(s.ok()) << s.message();
  s = compileOne("gen.cu", kGenerated, 90, false, opts, b);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(a, b);
  CacheStats st = cacheStats();
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.hits, 1u);
  // Another architecture is another entry.
  s = compileOne("gen.cu", kGenerated, 80, false, opts, b);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(cacheStats().misses, 2u);
  int arch = 0;
  ASSERT_TRUE(cubinArch(b, arch).ok());
  EXPECT_EQ(arch, 80);
}

TEST(Nvrtc, DiskCacheSurvivesMemoryCache) {
  char tmpl[] = "/tmp/spmd-nvrtc-cacheXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  setCacheDirectory(tmpl);
  clearMemoryCache();
  CompileOptions opts;
  std::string a, b;
  ASSERT_TRUE(compileOne("gen.cu", kGenerated, 80, false, opts, a).ok());
  clearMemoryCache();
  ASSERT_TRUE(compileOne("gen.cu", kGenerated, 80, false, opts, b).ok());
  EXPECT_EQ(cacheStats().hits, 1u);
  EXPECT_EQ(a, b);
  setCacheDirectory("");
  std::string cmd = std::string("rm -rf ") + tmpl;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST(Nvrtc, ErrorNamesTheSourceArchAndHasTheLog) {
  std::string image;
  spmd::Status s = compileOne(
      "broken_kernel.cu",
      "extern \"C\" __global__ void k(float *x) { x[0] = undefined_name; }", 80,
      false, CompileOptions(), image);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "broken_kernel.cu")) << s.message();
  EXPECT_TRUE(contains(s.message(), "sm_80")) << s.message();
  EXPECT_TRUE(contains(s.message(), "undefined_name")) << s.message();
}

TEST(Nvrtc, SelectImageByArchitecture) {
  CompileOptions opts;
  CompiledModule m;
  ASSERT_TRUE(compileModule("gen.cu", kGenerated, opts, m).ok());
  std::string image, how;
  ASSERT_TRUE(selectImage(m, 90, nvrtcRecompiler(opts), image, how).ok());
  EXPECT_EQ(how, "cubin sm_90");
  ASSERT_TRUE(selectImage(m, 86, nvrtcRecompiler(opts), image, how)
                  .ok()); // A10/A40/3090
  EXPECT_EQ(how, "cubin sm_80");
  std::vector<int> archs = supportedArchs();
  ASSERT_FALSE(archs.empty());
  if (std::count(archs.begin(), archs.end(), 120)) { // e.g. RTX 50xx
    ASSERT_TRUE(selectImage(m, 120, nvrtcRecompiler(opts), image, how).ok());
    EXPECT_EQ(how, "recompiled for sm_120");
    int arch = 0;
    ASSERT_TRUE(cubinArch(image, arch).ok());
    EXPECT_EQ(arch, 120);
  }
  // Without the source: PTX for a newer device, nothing for an older one.
  m.source.clear();
  ASSERT_TRUE(selectImage(m, 100, nvrtcRecompiler(opts), image, how).ok());
  EXPECT_EQ(how, "ptx compute_80");
  spmd::Status s = selectImage(m, 75, nvrtcRecompiler(opts), image, how);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "no image for sm_75")) << s.message();
}

TEST(Nvrtc, CubinArchRejectsNonCubins) {
  int arch;
  EXPECT_FALSE(cubinArch("not an elf", arch).ok());
  std::string elf(64, '\0');
  elf[0] = 0x7f, elf[1] = 'E', elf[2] = 'L', elf[3] = 'F', elf[4] = 2;
  elf[18] = 62; // x86-64
  spmd::Status s = cubinArch(elf, arch);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "EM_CUDA"));
}

} // namespace

namespace {

TEST(Nvrtc, ModuleRoundTripsThroughPlanBytes) {
  CompileOptions opts;
  CompiledModule m, back;
  ASSERT_TRUE(compileModule("gen.cu", kGenerated, opts, m).ok());
  std::string bytes = serializeModule(m);
  spmd::Status s = deserializeModule(bytes, back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(back.name, m.name);
  EXPECT_EQ(back.source, m.source);
  EXPECT_EQ(back.cubins, m.cubins);
  EXPECT_EQ(back.ptxArch, 80);
  EXPECT_EQ(back.ptx, m.ptx);
  // Malformed blobs are errors that say what is wrong.
  s = deserializeModule(bytes.substr(0, bytes.size() / 2), back);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "truncated")) << s.message();
  s = deserializeModule("garbage", back);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "SPMDCUMOD1")) << s.message();
  s = deserializeModule(bytes + "x", back);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "trailing")) << s.message();
  // A cubin filed under the wrong architecture is caught.
  CompiledModule wrong = m;
  wrong.cubins[90] = m.cubins.at(80);
  s = deserializeModule(serializeModule(wrong), back);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "it is sm_80")) << s.message();
}

} // namespace
