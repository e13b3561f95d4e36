"""The device interface: buffers, allocators and their reuse cache, the compiler disk cache, the Device registry, CPU programs."""
import ctypes, os, subprocess, sys, threading, time
from types import SimpleNamespace
import numpy as np
import pytest
from tg.uop import DType, dtypes
from tg.codegen.device import Allocator, Buffer, Compiled, Compiler, Device
from tg.codegen.diskcache import cache_db_path
from tg.codegen.devices.clang import ClangCompiler, CompilerError
from tg.codegen.devices.cpu import CPUProgram, _lane_waits
from tg.codegen.devices.cpu_pool import Batch, Lanes

@pytest.fixture
def cachedb(tmp_path, monkeypatch):
  path = tmp_path / "sub" / "cache.db"
  monkeypatch.setenv("CACHEDB", str(path))
  monkeypatch.delenv("DISABLE_COMPILER_CACHE", raising=False)
  return path

# ***** buffers *****

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.int8, dtypes.uint16, dtypes.float16, dtypes.int64, dtypes.float64, dtypes.bool])
def test_buffer_round_trip(device: str, dt: DType):
  x = (np.random.default_rng(1).standard_normal(33) * 50).astype(np.dtype(dt.fmt))
  b = Buffer(device, 33, dt).copyin(memoryview(x))
  assert b.is_allocated and b.nbytes == x.nbytes
  np.testing.assert_array_equal(b.numpy(), x)
  out = np.empty_like(x)
  b.copyout(memoryview(out))
  np.testing.assert_array_equal(out, x)

def test_buffer_allocates_lazily_and_checks_sizes():
  b = Buffer("cpu", 4, dtypes.int32)
  assert b.device == "CPU" and not b.is_allocated
  with pytest.raises(ValueError, match="copyin of 12 bytes into a 16-byte buffer"): b.copyin(memoryview(bytes(12)))
  with pytest.raises(TypeError, match="numpy has no"): Buffer("CPU", 2, dtypes.bfloat16).numpy()

def _vm_flags(addr: int) -> list[str]:
  """The kernel's flags of the mapping holding addr (/proc/self/smaps: 'hg' is MADV_HUGEPAGE's)."""
  inside = False
  for line in open("/proc/self/smaps"):
    if "-" in (first := line.split()[0]) and all(c in "0123456789abcdef-" for c in first):
      lo, hi = (int(v, 16) for v in first.split("-"))
      inside = lo <= addr < hi
    elif inside and line.startswith("VmFlags:"): return line.split()[1:]
  raise AssertionError(f"no mapping holds {addr:#x}")

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_big_host_buffers_are_huge_page_backed():
  """A CPU buffer from 2 MB on starts at a huge page, in a mapping advised MADV_HUGEPAGE (without it a streaming read of
  64 MB ran at a third of numpy's speed on the same data); it reads as zeros, and a view outlives the allocation."""
  a = Device["CPU"].allocator
  big, small = a._alloc(4 << 20), a._alloc(100)
  assert ctypes.addressof(big) % (2 << 20) == 0 and "hg" in _vm_flags(ctypes.addressof(big))
  assert bytes(big) == bytes(4 << 20) and bytes(small) == bytes(100)
  view = a.offset(big, 8, 3 << 20)
  big[3 << 20] = 7
  del big
  assert bytes(view) == b"\x07" + bytes(7)

class _NoHostView(Allocator):
  """Device memory the host can't address (bytearrays behind a handle): copies to and from it go through copyin/copyout."""
  def _alloc(self, nbytes: int) -> list: return [bytearray(nbytes)]
  def copyin(self, dest: list, src: memoryview) -> None: dest[0][:] = src
  def copyout(self, dest: memoryview, src: list) -> None: dest[:] = src[0]

@pytest.mark.parametrize("src_host, dst_host", [(True, True), (True, False), (False, True), (False, False)])
def test_copy_from_between_devices(src_host: bool, dst_host: bool):
  """Buffer.copy_from: one memcpy when either side is host memory, else a bounce through the host; the bytes arrive."""
  x = np.arange(10, dtype=np.int32) * 7 - 3
  src, dst = Buffer("CPU:1", 10, dtypes.int32), Buffer("PYTHON:1", 10, dtypes.int32)
  for b, host in ((src, src_host), (dst, dst_host)):
    if not host: b.allocator = _NoHostView()  # (this buffer's allocator only)
  src.copyin(memoryview(x))
  dst.copy_from(src)
  np.testing.assert_array_equal(dst.numpy(), x)
  with pytest.raises(ValueError, match="copy of a 40-byte buffer into a 4-byte one"): Buffer("CPU", 1, dtypes.int32).copy_from(src)

def test_copy_from_uses_the_devices_own_transfer():
  """A device that can copy from the other device itself (a copy engine) is asked first; NULL to NULL moves nothing."""
  src, dst = Buffer("NULL:1", 4, dtypes.int32), Buffer("NULL", 4, dtypes.int32)
  dst.copy_from(src.copyin(memoryview(bytes(16))))  # no copyout of NULL's (missing) data happens
  with pytest.raises(RuntimeError, match="NULL device has no data"): Buffer("CPU", 4, dtypes.int32).copy_from(src)

def test_views_share_memory_at_a_byte_offset():
  base = Buffer("CPU", 16, dtypes.int32)
  v = base.view(4, dtypes.int32, offset=8)   # elements 2..5 of base
  assert not base.is_allocated
  v.copyin(memoryview(np.array([10, 11, 12, 13], np.int32)))  # allocates the base
  assert base.is_allocated and v.base is base
  np.testing.assert_array_equal(base.numpy()[2:6], [10, 11, 12, 13])  # (the rest may be a reused buffer's old contents)
  vv = v.view(2, dtypes.int16, offset=4)     # the two halves of element 3, a view of a view is a view of the base
  assert vv.base is base and vv.offset == 12
  np.testing.assert_array_equal(vv.numpy(), np.array([11], np.int32).view(np.int16))
  base.copyin(memoryview(np.arange(16, dtype=np.int32)))
  np.testing.assert_array_equal(v.numpy(), [2, 3, 4, 5])
  with pytest.raises(ValueError, match="doesn't fit"): base.view(4, dtypes.int32, offset=60)

def test_buffers_pickle_with_their_bytes_and_views_with_their_base():
  """A pickled buffer comes back in memory of its own holding the same bytes; a view, as a view of the unpickled base
  (pickled together, one base); an unallocated buffer comes back unallocated."""
  import pickle
  base = Buffer("CPU", 6, dtypes.int32).copyin(memoryview(np.arange(6, dtype=np.int32)))
  b2, v2, e2 = pickle.loads(pickle.dumps((base, base.view(2, dtypes.int32, offset=12), Buffer("CPU", 3, dtypes.float32))))
  assert v2.base is b2 and b2 is not base and not e2.is_allocated
  v2.copyin(memoryview(np.array([-1, -2], np.int32)))
  np.testing.assert_array_equal(b2.numpy(), [0, 1, 2, -1, -2, 5])
  np.testing.assert_array_equal(base.numpy(), np.arange(6))

def test_cpu_kernel_reads_a_view():
  # the view's handle is what the Program takes: the kernel sees the view's first element at its pointer
  base = Buffer("CPU", 8, dtypes.int32).copyin(memoryview(np.arange(8, dtype=np.int32)))
  out = Buffer("CPU", 1, dtypes.int32).allocate()
  src = "void first(int* data0, int* data1, int core_id, int n_cores) { data0[0] = data1[0] * 100; }"
  prg = CPUProgram("first", Device["CPU"].compiler.compile(src))
  prg(out._buf, base.view(2, dtypes.int32, offset=12).ensure_allocated()._buf)
  assert out.numpy()[0] == 300

class CountingAllocator(Allocator):
  def __init__(self):
    super().__init__()
    self.allocs, self.frees = 0, 0
  def _alloc(self, nbytes: int) -> bytearray:
    self.allocs += 1
    return bytearray(nbytes)
  def _free(self, opaque: bytearray, nbytes: int) -> None: self.frees += 1

def test_allocator_reuses_freed_buffers_of_the_same_size():
  a = CountingAllocator()
  x = a.alloc(64)
  a.free(x, 64)
  assert a.alloc(64) is x and a.allocs == 1
  y = a.alloc(32)
  assert y is not x and a.allocs == 2
  a.free(y, 32)
  a.free_cache()
  assert a.frees == 1 and a.alloc(32) is not y and a.allocs == 3

def test_buffer_memory_is_reused_after_free():
  alloc = Device["CPU"].allocator
  b = Buffer("CPU", 100, dtypes.float32).allocate()
  addr = ctypes.addressof(b._buf)
  del b
  c = Buffer("CPU", 50, dtypes.float64).allocate()  # the same 400 bytes
  assert ctypes.addressof(c._buf) == addr
  c.deallocate()
  assert not c.is_allocated and alloc.cache[400]
  alloc.free_cache()
  assert not alloc.cache

def test_external_opaque_is_not_freed():
  alloc = Device["PYTHON"].allocator
  mem = alloc.alloc(8)
  b = Buffer("PYTHON", 2, dtypes.int32, opaque=mem)
  b.deallocate()
  assert mem not in alloc.cache.get(8, [])

# ***** compiler cache *****

class CountingCompiler(Compiler):
  def __init__(self, key: str):
    self.key, self.calls = key, 0
  @property
  def cachekey(self) -> str: return self.key
  def compile(self, src: str) -> bytes:
    self.calls += 1
    return f"{self.key}:{src}".encode()

def test_compile_cached_hits_on_the_second_compile(cachedb):
  comp = CountingCompiler("cc-1.0 -O2")
  assert comp.compile_cached("int x;") == b"cc-1.0 -O2:int x;"
  assert comp.compile_cached("int x;") == b"cc-1.0 -O2:int x;" and comp.calls == 1
  assert cachedb.exists()
  comp.compile_cached("int y;")
  assert comp.calls == 2
  other = CountingCompiler("cc-2.0 -O2")   # another compiler identity doesn't see the first one's binaries
  assert other.compile_cached("int x;") == b"cc-2.0 -O2:int x;" and other.calls == 1
  fresh = CountingCompiler("cc-1.0 -O2")   # a new instance (another process) does
  assert fresh.compile_cached("int x;") == b"cc-1.0 -O2:int x;" and fresh.calls == 0

def test_compile_cache_can_be_disabled(cachedb, monkeypatch):
  monkeypatch.setenv("DISABLE_COMPILER_CACHE", "1")
  comp = CountingCompiler("k")
  comp.compile_cached("a")
  comp.compile_cached("a")
  assert comp.calls == 2 and not cachedb.exists()

def test_compilers_without_identity_dont_cache(cachedb):
  assert Compiler().compile_cached("abc") == b"abc" and not cachedb.exists()

def test_cache_db_default_path(monkeypatch, tmp_path):
  monkeypatch.delenv("CACHEDB", raising=False)
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
  assert cache_db_path() == tmp_path / "tg" / "cache.db"
  monkeypatch.delenv("XDG_CACHE_HOME")
  monkeypatch.setenv("HOME", str(tmp_path))
  assert cache_db_path() == tmp_path / ".cache" / "tg" / "cache.db"

def test_clang_compile_is_cached(cachedb, monkeypatch):
  comp, calls = ClangCompiler(), []
  real = comp.compile
  monkeypatch.setattr(comp, "compile", lambda src: calls.append(src) or real(src))
  src = "int answer(void) { return 42; }"
  lib = comp.compile_cached(src)
  assert comp.compile_cached(src) == lib and len(calls) == 1 and lib[:4] == b"\x7fELF"
  assert comp.cc in comp.cachekey and "-ffp-contract=on -fno-math-errno -fwrapv" in comp.cachekey

# ***** registry *****

def test_device_names_are_canonical():
  assert Device["cpu"] is Device["CPU:0"] is Device["CPU"]
  assert type(Device["CPU"].renderer).__name__ == "CRenderer" and type(Device["PYTHON"].renderer).__name__ == "PythonRenderer"
  assert Device.canonicalize("amd:1") == "AMD:1" and Device.canonicalize("python") == "PYTHON"
  assert {"CPU", "PYTHON", "NULL"} <= set(Device.available)
  for name in ("CPU", "PYTHON", "NULL"):
    d = Device[name]
    assert isinstance(d, Compiled) and d.device == name and isinstance(d.allocator, Allocator) and isinstance(d.compiler, Compiler)

def test_unknown_device_lists_the_available_ones():
  with pytest.raises(RuntimeError, match="unknown device 'NOPE'.*CPU.*NULL.*PYTHON"): Device["nope"]

def _default_in_subprocess(dev: str | None) -> subprocess.CompletedProcess:
  env = {k: v for k, v in os.environ.items() if k != "DEV"} | ({"DEV": dev} if dev is not None else {})
  return subprocess.run([sys.executable, "-c", "from tg.codegen.device import Device; print(Device.DEFAULT)"],
                        env=env, capture_output=True, text=True)

def test_default_device_from_env():
  assert _default_in_subprocess(None).stdout.strip() == "CPU"
  assert _default_in_subprocess("python").stdout.strip() == "PYTHON"
  r = _default_in_subprocess("BOGUS")
  assert r.returncode != 0 and "unknown device 'BOGUS'" in r.stderr

# ***** CPU programs *****

THREADS_SRC = """
void slices(float* data0, int* data1, const float* data2, long long var_n, int core_id, int n_cores) {
  long long start = var_n * core_id / n_cores, end = var_n * (core_id + 1) / n_cores;
  for (long long i = start; i < end; i++) data0[i] = data2[i] * 2.0f + (float)core_id;
  data1[core_id] = n_cores;
}
void slices_job(const long long* a, int core_id, int n_cores) { slices((float*)a[0], (int*)a[1], (const float*)a[2], a[3], core_id, n_cores); }
"""

@pytest.mark.parametrize("cap", ["", "1"])
def test_cpu_program_runs_every_core(cachedb, monkeypatch, cap: str):
  monkeypatch.setenv("CPU_THREADS", cap)
  dev, n, cores = Device["CPU"], 1000, 4
  prg = dev.runtime("slices", dev.compiler.compile_cached(THREADS_SRC))
  x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
  out, ids, inp = Buffer("CPU", n, dtypes.float32).allocate(), Buffer("CPU", cores, dtypes.int32).allocate(), Buffer("CPU", n, dtypes.float32)
  inp.copyin(memoryview(x))
  t = prg(out._buf, ids._buf, inp._buf, global_size=(cores, 1, 1), vals=(n,), wait=True)
  assert isinstance(t, float) and t >= 0
  dev.synchronize()
  core_of = np.arange(n) * cores // n   # the contract's split: core i runs [n*i//cores, n*(i+1)//cores)
  np.testing.assert_array_equal(out.numpy(), x * 2 + core_of.astype(np.float32))
  np.testing.assert_array_equal(ids.numpy(), [cores] * cores)
  assert prg(out._buf, ids._buf, inp._buf, global_size=(cores, 1, 1), vals=(n,)) is None

def test_batch_launches_in_order_and_patches_words(cachedb):
  # cpu_pool.Batch: one call runs the kernels in order, each on its own thread count; set() patches an argument word
  dev, n, cores = Device["CPU"], 1000, 4
  prg = dev.runtime("slices", dev.compiler.compile_cached(THREADS_SRC))
  x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
  a, b, ids, inp = (Buffer("CPU", n, dtypes.float32).allocate(), Buffer("CPU", n, dtypes.float32).allocate(),
                    Buffer("CPU", cores, dtypes.int32).allocate(), Buffer("CPU", n, dtypes.float32).copyin(memoryview(x)))
  def addr(buf: Buffer) -> int: return ctypes.addressof(buf._buf)
  batch = Batch([(prg.job, [addr(a), addr(ids), addr(inp), n], cores), (prg.job, [addr(b), addr(ids), addr(a), n], 1)])
  batch()
  first = x * 2 + (np.arange(n) * cores // n).astype(np.float32)
  np.testing.assert_array_equal(a.numpy(), first)
  np.testing.assert_array_equal(b.numpy(), first * 2)  # the second kernel saw the first one's output
  batch.set(1, 2, addr(inp))
  batch.set(1, 3, 500)
  batch()
  np.testing.assert_array_equal(b.numpy(), np.concatenate([x[:500] * 2, first[500:] * 2]))

LANES_SRC = """
#include <unistd.h>
#include <sys/syscall.h>
void fill(float* data0, int* data1, long long var_n, int core_id, int n_cores) {  // slow on purpose: a lane that doesn't wait reads zeros
  usleep(20000);
  for (long long i = 0; i < var_n; i++) data0[i] = (float)(i + 49);
  data1[0] = (int)syscall(SYS_gettid), data1[1] = n_cores;
}
void fill_job(const long long* a, int core_id, int n_cores) { fill((float*)a[0], (int*)a[1], a[2], core_id, n_cores); }
void plus1(float* data0, int* data1, const float* data2, long long var_n, int core_id, int n_cores) {
  for (long long i = 0; i < var_n; i++) data0[i] = data2[i] + 1.0f;
  data1[0] = (int)syscall(SYS_gettid), data1[1] = n_cores;
}
void plus1_job(const long long* a, int core_id, int n_cores) { plus1((float*)a[0], (int*)a[1], (const float*)a[2], a[3], core_id, n_cores); }
"""

def test_lanes_run_side_by_side_and_wait_for_each_other(cachedb):
  """cpu_pool.Lanes: lane 0 on the calling thread, lane 1 on another, each kernel on one thread; lane 1's kernel reads
  what lane 0's slow one writes, after it (its wait), and a lane's second kernel runs after its first."""
  dev, n = Device["CPU"], 1 << 16
  lib = dev.compiler.compile_cached(LANES_SRC)
  fill, plus1 = dev.runtime("fill", lib), dev.runtime("plus1", lib)
  a, b, c = (Buffer("CPU", n, dtypes.float32).allocate() for _ in range(3))
  ids = [Buffer("CPU", 2, dtypes.int32).allocate() for _ in range(3)]
  def addr(buf: Buffer) -> int: return ctypes.addressof(buf._buf)
  lanes = Lanes([(fill.job, [addr(a), addr(ids[0]), n], 0), (plus1.job, [addr(b), addr(ids[1]), addr(a), n], 1),
                 (plus1.job, [addr(c), addr(ids[2]), addr(b), n], 1)], [[], [0], []])
  for _ in range(3):
    for buf in (a, b): buf.copyin(memoryview(np.zeros(n, np.float32)))
    lanes()
    want = np.arange(n, dtype=np.float32) + 49
    np.testing.assert_array_equal(b.numpy(), want + 1)
    np.testing.assert_array_equal(c.numpy(), want + 2)
    tids = [int(i.numpy()[0]) for i in ids]
    assert tids[0] == threading.get_native_id() and tids[1] == tids[2] != tids[0]
    assert [int(i.numpy()[1]) for i in ids] == [1, 1, 1]  # each kernel on its lane's one thread

def test_lane_waits_name_the_last_conflicting_kernel_of_each_other_lane():
  """CPU graphs of several devices: a kernel waits for the latest kernel of another lane that wrote what it reads or
  writes, or read what it writes (views count as their base buffer); never for its own lane."""
  bufs = [Buffer("CPU", 8, dtypes.float32) for _ in range(4)]
  view = Buffer("CPU", 2, dtypes.float32, base=bufs[0], offset=8)
  def run(outs: list[Buffer], ins: list[Buffer]):
    return SimpleNamespace(p=SimpleNamespace(outs=list(range(len(outs))), ins=list(range(len(outs), len(outs) + len(ins))))), outs + ins
  runs = [run([bufs[0]], []), run([bufs[1]], [view]), run([bufs[2]], [bufs[1]]), run([bufs[0]], [bufs[3]]),
          run([bufs[3]], [bufs[2]]), run([bufs[1]], [])]
  lanes = [0, 1, 0, 0, 1, 0]
  # 1 reads 0's output (through a view); 2 reads 1's; 3 overwrites what 1 read; 4 reads 2's output, writes what 3 read;
  # 5 overwrites what 2 read and what 1 wrote
  assert _lane_waits(runs, lanes) == [[], [0], [1], [1], [3], [1]]

def test_cpu_fuses_multiply_add_only_within_one_expression():
  # the C renderer writes each op as its own statement and MULACC as one expression: only that one is fused
  src = ("void fma_check(float* data0, const float* data1, int core_id, int n_cores) {"
         " float p = data1[0] * data1[1]; data0[0] = p + data1[2]; data0[1] = data1[0] * data1[1] + data1[2]; }")
  a = np.float32(1 + 2**-12)
  x = np.array([a, a, -(a * a)], np.float32)
  out = Buffer("CPU", 2, dtypes.float32).allocate()
  CPUProgram("fma_check", ClangCompiler().compile(src))(out._buf, Buffer("CPU", 3, dtypes.float32).copyin(memoryview(x))._buf)
  assert out.numpy()[0] == x[0] * x[1] + x[2] == 0.0                    # two roundings: the product's error is lost
  assert out.numpy()[1] == np.float32(np.float64(a) * np.float64(a) + np.float64(x[2])) == 2.0**-24  # one rounding

def test_compile_error_shows_message_and_source():
  with pytest.raises(RuntimeError, match=r"(?s)failed to compile.*error.*--- source ---.*this is not C"): ClangCompiler().compile("this is not C;")

def test_missing_compiler_says_what_to_install(monkeypatch):
  monkeypatch.setenv("CC", "/nonexistent/cc")
  with pytest.raises(CompilerError, match=r"no C compiler found \(looked for /nonexistent/cc\).*apt-get install clang.*DEV=PYTHON"):
    ClangCompiler().compile("int x;")

@pytest.mark.parametrize("cc, family, own", [("gcc", "gcc", ()), ("cc", "gcc", ()), ("clang-19", "clang", ("-fno-slp-vectorize",))])
def test_compiler_family_flags(monkeypatch, cc: str, family: str, own: tuple[str, ...]):
  """Each compiler gets only flags it knows: gcc rejected clang's -fno-slp-vectorize, so with CC=gcc nothing compiled."""
  monkeypatch.setenv("CC", cc)
  comp = ClangCompiler()
  assert comp.family == family and comp.all_flags == ClangCompiler.flags + own and all(f in comp.cachekey for f in own)
  check_wraps(comp)

GCC_PROGRAM = """import numpy as np
from tg.tensor import Tensor
rng = np.random.default_rng(0)
a, b = rng.standard_normal((256, 1024)).astype(np.float32), rng.standard_normal((1024, 64)).astype(np.float32)
checks = [((Tensor(a) @ Tensor(b)).numpy(), a @ b), ((Tensor(a) * 2 + 1).exp().sum(axis=1).numpy(), np.exp(a * 2 + 1).sum(axis=1))]
for got, want in checks: np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
np.testing.assert_array_equal(Tensor(a).abs().sqrt().numpy(), np.sqrt(np.abs(a)))  # vector sqrt lane by lane (tg_vsqrt), exact
print("ok")
"""

def test_cpu_device_with_gcc(tmp_path):
  """With CC=gcc every kernel and the thread pool compile and compute what numpy does (CPU_THREADS=2: threaded launches)."""
  env = {**os.environ, "CC": "gcc", "CPU_THREADS": "2", "CACHEDB": str(tmp_path / "cache.db")}
  r = subprocess.run([sys.executable, "-c", GCC_PROGRAM], capture_output=True, text=True, env=env, timeout=300)
  assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]

WRAP_SRC = "void wrap(int* data0, const int* data1, int core_id, int n_cores) { int x = data1[0]; data0[0] = x + 1 > x; data0[1] = x + 1; }"

def check_wraps(comp: ClangCompiler) -> None:
  # -fwrapv: x+1 > x is false for INT_MAX (without it the compiler may fold the comparison to true)
  out, x = Buffer("CPU", 2, dtypes.int32).allocate(), Buffer("CPU", 1, dtypes.int32).copyin(memoryview(np.array([2**31 - 1], np.int32)))
  CPUProgram("wrap", comp.compile(WRAP_SRC))(out._buf, x._buf)
  np.testing.assert_array_equal(out.numpy(), [0, -2**31])

def test_cpu_signed_overflow_wraps(): check_wraps(ClangCompiler())

def test_cpu_threads_from_many_python_threads(cachedb):
  """The C pool runs one job at a time: kernels launched from several Python threads at once all get every part done."""
  import concurrent.futures
  dev, n, cores = Device["CPU"], 1000, 4
  prg = dev.runtime("slices", dev.compiler.compile_cached(THREADS_SRC))
  x = np.arange(n, dtype=np.float32)
  def launch(k: int) -> None:
    out, ids, inp = Buffer("CPU", n, dtypes.float32).allocate(), Buffer("CPU", cores, dtypes.int32).allocate(), Buffer("CPU", n, dtypes.float32)
    inp.copyin(memoryview(x + k))
    for _ in range(50): prg(out._buf, ids._buf, inp._buf, global_size=(cores, 1, 1), vals=(n,))
    np.testing.assert_array_equal(out.numpy(), (x + k) * 2 + (np.arange(n) * cores // n).astype(np.float32))
  with concurrent.futures.ThreadPoolExecutor(4) as ex: list(ex.map(launch, range(8)))

def test_threaded_launch_needs_the_job_entry(cachedb):
  src = "void lone(float* data0, int core_id, int n_cores) { data0[core_id] = 1.0f; }"
  prg = Device["CPU"].runtime("lone", Device["CPU"].compiler.compile_cached(src))
  with pytest.raises(RuntimeError, match="lone can't run on 2 threads: the library has no lone_job"):
    prg(Buffer("CPU", 2, dtypes.float32).allocate()._buf, global_size=(2, 1, 1))

def test_cpu_threads_after_fork(cachedb):
  """A child forked after threaded kernels ran has none of the pool's workers: it must start its own, not wait forever."""
  dev, n, cores = Device["CPU"], 1000, 4
  prg = dev.runtime("slices", dev.compiler.compile_cached(THREADS_SRC))
  out, ids, inp = Buffer("CPU", n, dtypes.float32).allocate(), Buffer("CPU", cores, dtypes.int32).allocate(), Buffer("CPU", n, dtypes.float32)
  inp.copyin(memoryview(np.ones(n, np.float32)))
  prg(out._buf, ids._buf, inp._buf, global_size=(cores, 1, 1), vals=(n,))
  if (pid := os.fork()) == 0:
    try:
      prg(out._buf, ids._buf, inp._buf, global_size=(cores, 1, 1), vals=(n,))
      os._exit(0 if ids.numpy().tolist() == [cores] * cores else 1)
    finally: os._exit(2)
  for _ in range(200):  # 10 s at most
    done, status = os.waitpid(pid, os.WNOHANG)
    if done: break
    time.sleep(0.05)
  else:
    os.kill(pid, 9)
    pytest.fail("the forked child hung in a threaded kernel")
  assert os.waitstatus_to_exitcode(status) == 0

def test_device_default_is_the_default_device():
  assert Device.default is Device[Device.DEFAULT]
