// Kernels for the emulator's end-to-end tests: compiled by clang-19 for gfx1100 and gfx1200, checked against numpy.
#define KERNEL __attribute__((amdgpu_kernel)) __attribute__((visibility("default")))
#define LDS __attribute__((address_space(3)))
#define TID_X __builtin_amdgcn_workitem_id_x()
#define TID_Y __builtin_amdgcn_workitem_id_y()
#define GID_X (__builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + TID_X)
#define SYNC() do { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); __builtin_amdgcn_s_barrier(); \
                    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"); } while (0)

KERNEL void elementwise(float* a, const float* b, const float* c, int n) {
  int i = GID_X;
  if (i < n) a[i] = b[i] * 2.0f + c[i] / 3.0f - __builtin_sqrtf(c[i]);
}

KERNEL void reduce(float* out, const float* in) {
  static LDS float buf[256] __attribute__((loader_uninitialized));
  int t = TID_X;
  buf[t] = in[__builtin_amdgcn_workgroup_id_x() * 256 + t];
  SYNC();
  for (int s = 128; s > 0; s >>= 1) { if (t < s) buf[t] += buf[t + s]; SYNC(); }
  if (t == 0) out[__builtin_amdgcn_workgroup_id_x()] = buf[0];
}

// waves exchange data through LDS: each thread reads the value written by the thread 64 places away (another wave)
KERNEL void exchange(int* out) {
  static LDS int buf[128] __attribute__((loader_uninitialized));
  int t = TID_X;
  buf[t] = t * 3;
  SYNC();
  out[t] = buf[(t + 64) % 128];
}

#define TILE 16
KERNEL void matmul(float* c, const float* a, const float* b, int n) {  // c = a @ b, n x n, 16x16 tiles through LDS
  static LDS float ta[TILE][TILE] __attribute__((loader_uninitialized));
  static LDS float tb[TILE][TILE] __attribute__((loader_uninitialized));
  int tx = TID_X, ty = TID_Y;
  int row = __builtin_amdgcn_workgroup_id_y() * TILE + ty, col = __builtin_amdgcn_workgroup_id_x() * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += TILE) {
    ta[ty][tx] = a[row * n + k0 + tx];
    tb[ty][tx] = b[(k0 + ty) * n + col];
    SYNC();
    for (int k = 0; k < TILE; k++) acc += ta[ty][k] * tb[k][tx];
    SYNC();
  }
  c[row * n + col] = acc;
}

KERNEL void grid2d(int* out, int width) {  // the y workgroup id: ttmp7 on gfx12
  int x = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + TID_X;
  int y = __builtin_amdgcn_workgroup_id_y() * __builtin_amdgcn_workgroup_size_y() + TID_Y;
  out[y * width + x] = y * 1000 + x;
}

KERNEL void atomics(unsigned* counter, float* fsum, int* imax, const float* in) {
  int i = GID_X;
  __atomic_fetch_add(counter, 1u, __ATOMIC_RELAXED);
  __atomic_fetch_add(fsum, in[i], __ATOMIC_RELAXED);
  __atomic_fetch_max(imax, (int)(in[i] * 100.0f), __ATOMIC_RELAXED);
}

__attribute__((noinline)) static float pick(volatile float* p, int k) {  // p is a flat pointer into the caller's private memory
  float own[48];  // the callee's own frame: scratch_* instructions addressed from the stack pointer s32
  for (int j = 0; j < 48; j++) own[j] = p[j] * 2.0f;
  return p[k] + own[(k * 5) % 48];
}
KERNEL void scratch(float* out, const int* idx) {  // a private array indexed at run time lives in scratch
  volatile float priv[64];
  int t = GID_X;
  for (int k = 0; k < 64; k++) priv[k] = (float)(t * 64 + k);
  out[t] = pick(priv, idx[t] & 63) + priv[(idx[t] * 7) & 63];
}

