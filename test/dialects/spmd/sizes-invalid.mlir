// RUN: spmd-opt %s -split-input-file -verify-diagnostics
// Sizes that overflow int64 or exceed the limits are errors, not wrapped
// values, crashes or hangs.

// The partitioner enumerates every device: 2^40 of them would hang.
// expected-error @+1 {{'spmd.mesh' op mesh @mesh has 1099511627776 devices, more than the supported 2^20 (1048576)}}
spmd.mesh @mesh ["x"=1099511627776]

// -----

// expected-error @+1 {{'spmd.mesh' op mesh @mesh has a device count that overflows int64, more than the supported 2^20}}
spmd.mesh @mesh ["x"=4294967296, "y"=4294967296]

// -----

// 2^20 devices are accepted.
spmd.mesh @mesh ["x"=1024, "y"=1024]

// -----

// offset + bytes wraps negative: it must not pass the arena bound check.
func.func @f() attributes {spmd.plan_arena_bytes = 128 : i64} {
  // expected-error @+1 {{'spmd.plan_buffer' op ends beyond the arena of 128 bytes (offset 9223372036854775807, 64 bytes)}}
  %b = spmd.plan_buffer offset 9223372036854775807 bytes 64 : memref<16xf32>
  return
}

// -----

// 2^64 bytes wrap to 0: a 0-byte buffer must not hold this type.
func.func @f() {
  // expected-error @+1 {{'spmd.plan_buffer' op has a byte size that overflows int64}}
  %b = spmd.plan_buffer offset 0 bytes 0 : memref<1152921504606846976x4xf32>
  return
}
