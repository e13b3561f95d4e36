"""VIZ in a real browser: headless Chromium (Debian's chromium, driven through its debugging protocol) opens the viewer of
a trace, clicks a kernel and a step, and sees the graph's nodes (the UOps of that step), the kernel's source and the
launch timeline; the arrow keys move through steps and kernels. VIZ_SCREENSHOT=path saves the page (README's picture).
Also: VIZ=1 serves at the end of a run, and `python -m tg.uop.viz` reads a saved trace."""
from __future__ import annotations
import collections, json, os, pathlib, subprocess, sys, time, urllib.request
from typing import Iterator
import numpy as np
import pytest
from tg.uop import Context, track
from tg.uop.viz import serve
from tg.codegen import profile
from tg.tensor import Tensor
from cdp import Browser, find_chromium

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAM = "import numpy as np\nfrom tg.tensor import Tensor\nprint((Tensor(np.ones((4, 9), np.float32)).exp2() + 1).sum(1).numpy())\n"

@pytest.fixture
def trace(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
  track.reset(); profile.events.clear()
  rng = np.random.default_rng(0)
  x, w = rng.standard_normal((6, 19), dtype=np.float32), rng.standard_normal((19, 5), dtype=np.float32)
  with Context(VIZ=-1): out = (Tensor(x) @ Tensor(w)).relu().sum(1).numpy()
  np.testing.assert_allclose(out, np.maximum(x @ w, 0).sum(1), rtol=1e-4, atol=1e-5)
  yield track.save(tmp_path / "viz.pkl")
  track.reset(); profile.events.clear()

def ops(us) -> collections.Counter: return collections.Counter(u.op.name for u in us)

@pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)")
def test_viewer_in_chromium(trace: pathlib.Path) -> None:
  groups = list(track.groups)
  server = serve(trace)
  browser = Browser(1280, 800)
  try:
    browser.call("Page.enable")
    browser.call("Page.navigate", url=f"http://127.0.0.1:{server.server_port}/")
    browser.wait_for("document.body && document.body.dataset.ready === '1'")
    assert browser.eval("document.querySelectorAll('#groups .item').length") == len(groups)
    assert browser.eval("document.querySelectorAll('#timelinesvg rect.launch').length") == len(profile.events) > 0

    # click a kernel: its steps are listed, its first step (the lowering's input: the kernel AST) is drawn, its source shown
    k = max((i for i, g in enumerate(groups) if g.kind == "kernel"), key=lambda i: sum(len(r.matches) for r in groups[i].rewrites))
    kernel = groups[k]
    browser.click(f'#groups .item[data-i="{k}"]')
    browser.wait_for(f"document.querySelector('#groups .item.selected')?.dataset.i === '{k}' && "
                     "document.querySelector('#steps .item.selected')?.dataset.s === '0'")
    n_steps = len(kernel.rewrites) + sum(len(r.matches) for r in kernel.rewrites)
    assert browser.eval("document.querySelectorAll('#steps .item').length") == n_steps
    drawn = browser.eval("[...document.querySelectorAll('#graphsvg .node')].map(n => n.dataset.op)")
    assert collections.Counter(drawn) == ops(kernel.rewrites[0].input.toposort())
    assert browser.eval("document.getElementById('source').textContent") == kernel.info["source"]
    assert browser.eval("document.querySelectorAll('#source .kw, #source .ty').length") > 0  # highlighted

    # click the last match of the first rewrite that matched: the graph drawn is that rewrite's output
    r = next(i for i, x in enumerate(kernel.rewrites) if x.matches)
    rw = kernel.rewrites[r]
    s = sum(1 + len(x.matches) for x in kernel.rewrites[:r]) + len(rw.matches)
    browser.click(f'#steps .item[data-s="{s}"]')
    browser.wait_for(f"document.querySelector('#steps .item.selected')?.dataset.s === '{s}' && "
                     f"document.getElementById('stepinfo').textContent.includes('match {len(rw.matches)}/')")
    time.sleep(0.2)
    drawn = browser.eval("[...document.querySelectorAll('#graphsvg .node')].map(n => n.dataset.op)")
    assert rw.output is not None and collections.Counter(drawn) == ops(rw.output.toposort())
    assert browser.eval("document.querySelectorAll('#graphsvg .node.changed').length") >= 1
    diff = browser.eval("[...document.querySelectorAll('#diff div')].map(d => d.textContent)")
    assert any(line[:2] in ("+n", "-n") for line in diff), diff
    if path := os.environ.get("VIZ_SCREENSHOT"): pathlib.Path(path).write_bytes(browser.screenshot())

    # keys: up one step, right one kernel
    browser.key("ArrowUp")
    browser.wait_for(f"document.querySelector('#steps .item.selected')?.dataset.s === '{s - 1}'")
    browser.key("ArrowRight")
    browser.wait_for(f"document.querySelector('#groups .item.selected')?.dataset.i === '{k + 1}'" if k + 1 < len(groups) else "true")
    assert browser.screenshot()[:8] == b"\x89PNG\r\n\x1a\n"
  finally:
    browser.close()
    server.shutdown()

def test_viz1_serves_at_exit(tmp_path: pathlib.Path) -> None:
  """VIZ=1: the run saves its trace and serves it, printing the URL; the API answers with the run's kernels."""
  env = {**os.environ, "VIZ": "1", "VIZ_PATH": str(tmp_path / "run.pkl")}
  proc = subprocess.Popen([sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
  try:
    url = None
    deadline = time.monotonic() + 120
    while url is None and time.monotonic() < deadline and (line := proc.stdout.readline()):  # type: ignore[union-attr]
      if "http://" in line: url = line[line.index("http://"):].split()[0]
    assert url is not None, proc.stderr.read() if proc.poll() is not None else "no URL printed"  # type: ignore[union-attr]
    groups = json.loads(urllib.request.urlopen(url + "api/groups", timeout=30).read())["groups"]
    assert {"schedule", "kernel"} <= {g["kind"] for g in groups} and (tmp_path / "run.pkl").exists()
  finally:
    proc.terminate()
    proc.wait(10)

def test_module_command_reports_a_bad_trace(tmp_path: pathlib.Path) -> None:
  (tmp_path / "bad.pkl").write_bytes(b"junk")
  r = subprocess.run([sys.executable, "-m", "tg.uop.viz", str(tmp_path / "bad.pkl")], capture_output=True, text=True, timeout=60)
  assert r.returncode != 0 and "is not a VIZ trace" in r.stderr
