//===- FakeCudaDriver.cpp - A libcuda that finds no GPU -------------------===//
//
// Exports the entry points the runtime requires, with cuInit failing as a
// driver without a device does, so the "driver present, no GPU" path is
// tested on machines without a driver.
//
//===----------------------------------------------------------------------===//

extern "C" {
int cuInit(unsigned) { return 100; } // CUDA_ERROR_NO_DEVICE
int cuDriverGetVersion(int *v) {
  *v = 12040;
  return 0;
}
int cuGetErrorName(int rc, const char **s) {
  *s = rc == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuGetErrorString(int rc, const char **s) {
  *s = rc == 100 ? "no CUDA-capable device is detected" : "unknown error";
  return 0;
}
}
