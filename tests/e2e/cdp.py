"""A small driver for headless Chromium through its remote debugging protocol (CDP), over a WebSocket written with the
standard library (RFC 6455: masked client frames, the server's frames unmasked, text messages of JSON)."""
from __future__ import annotations
import base64, json, os, pathlib, shutil, socket, subprocess, tempfile, time, urllib.parse, urllib.request
from typing import Any

def find_chromium() -> str | None:
  for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
    if path := shutil.which(name): return path
  return None

class WebSocket:
  def __init__(self, url: str, timeout: float = 30.0):
    u = urllib.parse.urlparse(url)
    self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
      if not (chunk := self.sock.recv(1)): raise ConnectionError("WebSocket handshake: connection closed")
      head += chunk
    if b" 101 " not in head.split(b"\r\n")[0]: raise ConnectionError(f"WebSocket handshake refused: {head.decode(errors='replace')}")

  def _read(self, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
      if not (chunk := self.sock.recv(n - len(buf))): raise ConnectionError("WebSocket closed")
      buf += chunk
    return buf

  def send(self, text: str) -> None:
    data, mask = text.encode(), os.urandom(4)
    n = len(data)
    head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 1 << 16
                            else bytes([0x80 | 127]) + n.to_bytes(8, "big"))
    self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

  def recv(self) -> str:
    """The next text message (fragments joined; pings and other control frames skipped)."""
    parts: list[bytes] = []
    while True:
      b0, b1 = self._read(2)
      n = b1 & 0x7F
      if n == 126: n = int.from_bytes(self._read(2), "big")
      elif n == 127: n = int.from_bytes(self._read(8), "big")
      payload = self._read(n)
      if b0 & 0x0F >= 0x8:
        if b0 & 0x0F == 0x8: raise ConnectionError("WebSocket closed by the browser")
        continue
      parts.append(payload)
      if b0 & 0x80: return b"".join(parts).decode()

  def close(self) -> None: self.sock.close()

class Browser:
  """Headless Chromium with one page; `call` sends a CDP command and returns its result."""
  def __init__(self, width: int = 1400, height: int = 900):
    exe = find_chromium()
    if exe is None: raise FileNotFoundError("no chromium on PATH (Debian: apt-get install chromium)")
    self.profile = tempfile.mkdtemp(prefix="tg-cdp-")
    self.proc = subprocess.Popen([exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                                  "--remote-debugging-port=0", f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = pathlib.Path(self.profile) / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
      if time.monotonic() > deadline or self.proc.poll() is not None: self.close(); raise RuntimeError("chromium didn't start its debugging port")
      time.sleep(0.05)
    port = int(port_file.read_text().split("\n")[0])
    pages = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
    page = next(p for p in pages if p.get("type") == "page")
    self.ws, self.next_id = WebSocket(page["webSocketDebuggerUrl"]), 0

  def call(self, method: str, **params: Any) -> dict[str, Any]:
    self.next_id += 1
    self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
    while True:
      msg = json.loads(self.ws.recv())
      if msg.get("id") == self.next_id:
        if "error" in msg: raise RuntimeError(f"CDP {method}: {msg['error']}")
        return msg["result"]

  def eval(self, expr: str) -> Any:
    """The value of a JavaScript expression in the page (promises awaited)."""
    r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
    if "exceptionDetails" in r: raise RuntimeError(f"JavaScript error in {expr!r}: {r['exceptionDetails']}")
    return r["result"].get("value")

  def wait_for(self, expr: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (v := self.eval(expr)):
      if time.monotonic() > deadline: raise TimeoutError(f"waited {timeout} s for {expr}")
      time.sleep(0.05)
    return v

  def click(self, selector: str) -> None:
    """A real mouse click (press and release) at the middle of the first element matching selector."""
    box = self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}}); "
                    "const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
    for kind in ("mousePressed", "mouseReleased"): self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

  def key(self, key: str) -> None:
    codes = {"ArrowUp": 38, "ArrowDown": 40, "ArrowLeft": 37, "ArrowRight": 39}
    for kind in ("rawKeyDown", "keyUp"): self.call("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=codes[key])

  def screenshot(self) -> bytes: return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

  def close(self) -> None:
    if getattr(self, "ws", None) is not None: self.ws.close()
    self.proc.terminate()
    try: self.proc.wait(10)
    except subprocess.TimeoutExpired: self.proc.kill()
    shutil.rmtree(self.profile, ignore_errors=True)
