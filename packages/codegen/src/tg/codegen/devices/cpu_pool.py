"""Host threads for CPU kernels: a pool written in C, so handing a kernel's parts to the other cores takes microseconds.

A Python thread pool needs a futex wake-up and the GIL for every part: measured ~60 us per launch on the 2-core CI
machine, more than many kernels of a training step take. Here the workers spin on a job counter for a while after each
job (the next kernel usually comes within microseconds), then sleep on a condition variable; the caller runs part 0
itself and waits for the rest. One job runs at a time (a lock), so Python threads may launch kernels concurrently; a
forked child starts workers of its own. A threaded kernel exports, besides its function, NAME_job(const long long* args,
int core_id, int n_cores): its arguments as 64-bit words (buffer addresses, then the variables' values), for the pool."""
from __future__ import annotations
import ctypes, functools
from tg.codegen.devices.clang import ClangCompiler, load_library

MAX_THREADS = 256  # the caller and up to 255 workers

POOL_SRC = f"#define MAX_WORKERS {MAX_THREADS - 1}\n" + r"""
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
typedef void (*tg_job)(const long long*, int, int);
enum { SPINS = 1 << 20 };
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER, mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static tg_job job_fn;
static const long long* job_args;
static int job_n, started;
static atomic_long generation;  // one more per job
static atomic_int remaining;    // the workers' parts of the current job not finished yet
static long born[MAX_WORKERS + 1];

static void* worker(void* arg) {
  int id = (int)(long)arg;
  long seen = born[id], gen;
  for (;;) {
    int spins = 0;
    while ((gen = atomic_load_explicit(&generation, memory_order_acquire)) == seen) {
      if (++spins < SPINS) continue;
      pthread_mutex_lock(&mu);
      while ((gen = atomic_load_explicit(&generation, memory_order_acquire)) == seen) pthread_cond_wait(&wake, &mu);
      pthread_mutex_unlock(&mu);
      break;
    }
    seen = gen;
    if (id < job_n) {
      job_fn(job_args, id, job_n);
      atomic_fetch_sub_explicit(&remaining, 1, memory_order_release);
    }
  }
  return 0;
}

// a forked child has none of the workers: it starts its own
static void after_fork(void) {
  started = 0;
  pthread_mutex_init(&job_lock, 0), pthread_mutex_init(&mu, 0), pthread_cond_init(&wake, 0);
}
__attribute__((constructor)) static void init(void) { pthread_atfork(0, 0, after_fork); }

int tg_parallel(tg_job job, const long long* args, int n);

// a batch of kernels in order, each on n threads (a jitted step's kernels: one call from Python for all of them)
typedef struct { tg_job fn; const long long* args; long long n; } tg_launch;
int tg_batch(const tg_launch* ls, int count) {
  for (int i = 0; i < count; i++) {
    if (ls[i].n == 1) ls[i].fn(ls[i].args, 0, 1);
    else if (tg_parallel(ls[i].fn, ls[i].args, (int)ls[i].n) != 0) return -1;
  }
  return 0;
}

// kernels of several lanes side by side (a multi-device step, one lane per device): lane k runs its kernels in order on
// thread k, each kernel on that one thread; a kernel first waits for the kernels of other lanes it depends on (spinning,
// then yielding the core: on a busy machine the other lane's thread may be descheduled)
typedef struct { tg_job fn; const long long* args; int lane, nwait; const int* waits; } tg_step;
typedef struct { const tg_step* steps; int count; atomic_int* done; } tg_plan;
static void lane_job(const long long* a, int lane, int n) {
  const tg_plan* p = (const tg_plan*)a[0];
  for (int i = 0; i < p->count; i++) {
    const tg_step* s = &p->steps[i];
    if (s->lane != lane) continue;
    for (int w = 0; w < s->nwait; w++)
      for (int spins = 0; !atomic_load_explicit(&p->done[s->waits[w]], memory_order_acquire); spins++)
        if (spins > 4096) sched_yield();
    s->fn(s->args, 0, 1);
    atomic_store_explicit(&p->done[i], 1, memory_order_release);
  }
}
int tg_lanes(const tg_plan* p, int lanes) {
  for (int i = 0; i < p->count; i++) atomic_store_explicit(&p->done[i], 0, memory_order_relaxed);
  long long a = (long long)p;
  return tg_parallel(lane_job, &a, lanes);
}

int tg_parallel(tg_job job, const long long* args, int n) {
  pthread_mutex_lock(&job_lock);
  while (started < n - 1) {
    if (started == MAX_WORKERS) { pthread_mutex_unlock(&job_lock); return -1; }
    pthread_t t;
    born[started + 1] = atomic_load(&generation);
    if (pthread_create(&t, 0, worker, (void*)(long)(started + 1)) != 0) { pthread_mutex_unlock(&job_lock); return -1; }
    pthread_detach(t);
    started++;
  }
  job_fn = job, job_args = args, job_n = n;
  atomic_store(&remaining, n - 1);
  pthread_mutex_lock(&mu);
  atomic_fetch_add_explicit(&generation, 1, memory_order_release);
  pthread_cond_broadcast(&wake);
  pthread_mutex_unlock(&mu);
  job(args, 0, n);
  while (atomic_load_explicit(&remaining, memory_order_acquire) > 0) {}
  pthread_mutex_unlock(&job_lock);
  return 0;
}
"""

@functools.cache
def _pool() -> ctypes.CDLL:
  lib = load_library(ClangCompiler().compile_cached(POOL_SRC))
  lib.tg_parallel.argtypes, lib.tg_parallel.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int], ctypes.c_int
  lib.tg_batch.argtypes, lib.tg_batch.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_int
  lib.tg_lanes.argtypes, lib.tg_lanes.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_int
  return lib

def run_parallel(job: ctypes._CFuncPtr, words: list[int], n: int) -> None:
  """job(words, i, n) for i in 0..n-1, part 0 on this thread, the others on the pool's."""
  args = (ctypes.c_longlong * max(len(words), 1))(*words)
  if _pool().tg_parallel(ctypes.cast(job, ctypes.c_void_p), args, n) != 0: raise RuntimeError(f"couldn't start {n - 1} host threads for a kernel")

class _Launch(ctypes.Structure):
  _fields_ = [("fn", ctypes.c_void_p), ("args", ctypes.c_void_p), ("n", ctypes.c_longlong)]

class Batch:
  """Kernels launched in order by one call into C (tg_batch): from Python a launch costs ~10 us (argument checks, ctypes
  conversions), inside one call well under 1 us. Each kernel's arguments are a row of 64-bit words, NAME_job's ABI
  (buffer addresses, then the variables' values), patched in place when a buffer or a value changes."""
  def __init__(self, launches: list[tuple[ctypes._CFuncPtr, list[int], int]]):
    self.rows = [(ctypes.c_longlong * max(len(words), 1))(*words) for _, words, _ in launches]
    self.table = (_Launch * len(launches))(*[_Launch(ctypes.cast(job, ctypes.c_void_p), ctypes.addressof(row), n)
                                             for (job, _, n), row in zip(launches, self.rows)])
  def set(self, k: int, i: int, word: int) -> None: self.rows[k][i] = word
  def __call__(self) -> None:
    if _pool().tg_batch(self.table, len(self.rows)) != 0: raise RuntimeError("couldn't start the host threads for a batch of kernels")

class _Step(ctypes.Structure):
  _fields_ = [("fn", ctypes.c_void_p), ("args", ctypes.c_void_p), ("lane", ctypes.c_int), ("nwait", ctypes.c_int), ("waits", ctypes.c_void_p)]

class _Plan(ctypes.Structure):
  _fields_ = [("steps", ctypes.c_void_p), ("count", ctypes.c_int), ("done", ctypes.c_void_p)]

class Lanes(Batch):
  """Kernels in lanes run side by side by one call into C (tg_lanes): lane k on host thread k, each kernel on that thread
  alone, a kernel after the kernels of other lanes it waits for (indices into the launches). For several devices of one
  host memory with a core each: their kernels overlap, and no kernel waits for the other cores at its end."""
  def __init__(self, launches: list[tuple[ctypes._CFuncPtr, list[int], int]], waits: list[list[int]]):
    super().__init__(launches)
    self.lanes = max(lane for *_, lane in launches) + 1
    self.waits = [(ctypes.c_int * max(len(w), 1))(*w) for w in waits]
    self.steps = (_Step * len(launches))(*[_Step(t.fn, t.args, t.n, len(w), ctypes.addressof(wa))
                                           for t, w, wa in zip(self.table, waits, self.waits)])
    self.done = (ctypes.c_int * len(launches))()
    self.plan = _Plan(ctypes.addressof(self.steps), len(launches), ctypes.addressof(self.done))
  def __call__(self) -> None:
    if _pool().tg_lanes(ctypes.byref(self.plan), self.lanes) != 0:
      raise RuntimeError(f"couldn't start {self.lanes} host threads for lanes of kernels")
