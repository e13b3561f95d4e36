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


// WMMA: one wave computes D = A*B + C for 16x16 row-major matrices; each lane loads its fragments as the ISA lays them
// out in VGPRs (A_AT/B_AT: the element in slot i of lane l; CD_AT: the same for C and D).
#ifdef __GFX12__
#define AB_LEN 8  // row (A) / column (B) l%16, K = 8*(l/16) + i
#define A_AT(l, i) ((l) % 16 * 16 + 8 * ((l) / 16) + (i))
#define B_AT(l, i) ((8 * ((l) / 16) + (i)) * 16 + (l) % 16)
#define CD_AT(l, i) ((8 * ((l) / 16) + (i)) * 16 + (l) % 16)  // column l%16, row 8*(l/16) + i
#define CD16_LEN 8  // 16-bit C/D: two rows a VGPR
#define CD16(i, hi) (i)
#define WMMA(name) __builtin_amdgcn_wmma_##name##_w32_gfx12
#define OPSEL(hi)
#else
#define AB_LEN 16  // row (A) / column (B) l%16, all of K: lanes 16-31 repeat lanes 0-15
#define A_AT(l, i) ((l) % 16 * 16 + (i))
#define B_AT(l, i) ((i) * 16 + (l) % 16)
#define CD_AT(l, i) ((2 * (i) + (l) / 16) * 16 + (l) % 16)  // column l%16, row 2i + l/16
#define CD16_LEN 16  // 16-bit C/D: one row a VGPR, in the half op_sel picks
#define CD16(i, hi) (2 * (i) + (hi))
#define WMMA(name) __builtin_amdgcn_wmma_##name##_w32
#define OPSEL(hi) , hi
#endif
typedef _Float16 hab __attribute__((ext_vector_type(AB_LEN)));
typedef short sab __attribute__((ext_vector_type(AB_LEN)));
typedef char cab __attribute__((ext_vector_type(AB_LEN)));
typedef int iab __attribute__((ext_vector_type(AB_LEN / 4)));
typedef _Float16 hcd __attribute__((ext_vector_type(CD16_LEN)));
typedef short scd __attribute__((ext_vector_type(CD16_LEN)));
typedef float fcd __attribute__((ext_vector_type(8)));
typedef int icd __attribute__((ext_vector_type(8)));
#define LOAD_AB(T, fa, fb) T fa, fb; for (int i = 0; i < AB_LEN; i++) { fa[i] = a[A_AT(TID_X, i)]; fb[i] = b[B_AT(TID_X, i)]; }

// a float32-accumulating WMMA: A and B of element type AB (vector ABV), C and D float
#define WMMA_F32_KERNEL(name, AB, ABV, op) \
KERNEL void name(float* d, const AB* a, const AB* b, const float* c) { \
  LOAD_AB(ABV, fa, fb) \
  fcd fc; \
  for (int i = 0; i < 8; i++) fc[i] = c[CD_AT(TID_X, i)]; \
  fcd fd = WMMA(op)(fa, fb, fc); \
  for (int i = 0; i < 8; i++) d[CD_AT(TID_X, i)] = fd[i]; \
}
WMMA_F32_KERNEL(wmma_f32_f16, _Float16, hab, f32_16x16x16_f16)
WMMA_F32_KERNEL(wmma_f32_bf16, short, sab, f32_16x16x16_bf16)

KERNEL void wmma_f16_f16(_Float16* d, const _Float16* a, const _Float16* b, const _Float16* c) {
  LOAD_AB(hab, fa, fb)
  hcd fc = {};
  for (int i = 0; i < 8; i++) fc[CD16(i, 0)] = c[CD_AT(TID_X, i)];
  hcd fd = WMMA(f16_16x16x16_f16)(fa, fb, fc OPSEL(0));
  for (int i = 0; i < 8; i++) d[CD_AT(TID_X, i)] = fd[CD16(i, 0)];
}

KERNEL void wmma_bf16_bf16(short* d, const short* a, const short* b, const short* c) {  // the high halves on gfx11
  LOAD_AB(sab, fa, fb)
  scd fc = {};
  for (int i = 0; i < 8; i++) fc[CD16(i, 1)] = c[CD_AT(TID_X, i)];
  scd fd = WMMA(bf16_16x16x16_bf16)(fa, fb, fc OPSEL(1));
  for (int i = 0; i < 8; i++) d[CD_AT(TID_X, i)] = fd[CD16(i, 1)];
}

KERNEL void wmma_i32_iu8(int* d, const signed char* a, const unsigned char* b, const int* c) {  // A signed, B unsigned
  LOAD_AB(cab, fa, fb)
  icd fc;
  for (int i = 0; i < 8; i++) fc[i] = c[CD_AT(TID_X, i)];
  icd fd = WMMA(i32_16x16x16_iu8)(1, (iab)fa, 0, (iab)fb, fc, 0);
  for (int i = 0; i < 8; i++) d[CD_AT(TID_X, i)] = fd[i];
}
