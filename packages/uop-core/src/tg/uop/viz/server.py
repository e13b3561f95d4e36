"""The HTTP server: static files, and JSON from the trace under /api (groups, one group, one step)."""
from __future__ import annotations
import json, pathlib, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from tg.uop.viz.trace import Trace, TraceError, load

STATIC = pathlib.Path(__file__).with_name("static")
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".txt": "text/plain"}

def _api(trace: Trace, parts: list[str]) -> Any:
  """/api/groups, /api/timeline, /api/group/G, /api/step/G/R/K."""
  ints = [int(p) for p in parts[1:]]
  if parts[0] == "groups" and not ints: return {"groups": trace.groups(), "path": trace.data.get("path", "")}
  if parts[0] == "timeline" and not ints: return trace.data.get("timeline", [])
  if parts[0] == "group" and len(ints) == 1: return trace.group(*ints)
  if parts[0] == "step" and len(ints) == 3: return trace.step(*ints)
  raise TraceError(f"unknown API path /api/{'/'.join(parts)}")

def _handler(trace: Trace) -> type[BaseHTTPRequestHandler]:
  lock = threading.Lock()  # the trace's node table grows as steps are asked for
  class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None: pass
    def _send(self, code: int, body: bytes, ctype: str) -> None:
      self.send_response(code)
      self.send_header("Content-Type", ctype + "; charset=utf-8")
      self.send_header("Content-Length", str(len(body)))
      self.end_headers()
      self.wfile.write(body)
    def do_GET(self) -> None:
      path = self.path.split("?")[0]
      if path.startswith("/api/"):
        try:
          with lock: body = json.dumps(_api(trace, path[5:].split("/"))).encode()
        except (TraceError, ValueError) as e: return self._send(404, json.dumps({"error": str(e)}).encode(), "application/json")
        return self._send(200, body, "application/json")
      f = STATIC / ("index.html" if path == "/" else path.lstrip("/"))
      if f.resolve().parent != STATIC.resolve() or not f.is_file(): return self._send(404, b"not found", "text/plain")
      self._send(200, f.read_bytes(), TYPES.get(f.suffix, "application/octet-stream"))
  return Handler

def serve(trace: str | pathlib.Path | dict[str, Any], port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
  """A server for a trace (a saved file or its data) on host:port (0: any free port), answering from a thread; stop it
  with .shutdown(). Its URL: f"http://{host}:{server.server_port}/"."""
  server = ThreadingHTTPServer((host, port), _handler(Trace(_data(trace))))
  threading.Thread(target=server.serve_forever, daemon=True).start()
  return server

def _data(trace: str | pathlib.Path | dict[str, Any]) -> dict[str, Any]:
  return trace if isinstance(trace, dict) else {**load(trace), "path": str(trace)}

def serve_forever(trace: str | pathlib.Path | dict[str, Any], port: int = 8000) -> None:
  """Serve a trace until Ctrl-C, printing its URL (the next free port when `port` is taken)."""
  trace = _data(trace)
  for p in range(port, port + 20):
    try: server = serve(trace, p); break
    except OSError: continue
  else: server = serve(trace, 0)
  print(f"VIZ: {trace.get('path') or 'the trace'} at http://127.0.0.1:{server.server_port}/ (Ctrl-C to stop)", flush=True)
  try: threading.Event().wait()
  except KeyboardInterrupt: pass
  finally: server.shutdown()
