// Kernels that need scratch (the private segment), compiled by clang-19 for gfx1100 and gfx1200 and run through the driver.
#define KERNEL __attribute__((amdgpu_kernel)) __attribute__((visibility("default")))
#define GID_X (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x())

__attribute__((noinline)) static int mix(volatile int* p, int k) {  // not inlined: a call with its own stack frame
  volatile int own[40];
  for (int j = 0; j < 40; j++) own[j] = p[j] ^ j;
  return p[k] + own[(k * 3) % 40];
}

// out[t] = mix(priv, idx[t] % 64) + priv[(idx[t] * 5) % 64], priv[k] = t * 100 + k: a stack array indexed at run time
KERNEL void stack_call(int* out, const int* idx) {
  volatile int priv[64];
  int t = GID_X;
  for (int k = 0; k < 64; k++) priv[k] = t * 100 + k;
  out[t] = mix(priv, idx[t] & 63) + priv[(idx[t] * 5) & 63];
}
