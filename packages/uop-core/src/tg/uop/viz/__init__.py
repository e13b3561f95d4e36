"""VIZ's viewer: a standard-library HTTP server on localhost showing a saved trace (tg.uop.track) in a browser: the
schedules and kernels, each one's rewrites and their matches, the graph of a step laid out by dagre (shipped in
static/, never fetched), the diff of a step, a kernel's source and the launch timeline.

  python -m tg.uop.viz [trace.pkl] [--port N]   (default: the trace VIZ=1 or VIZ=-1 saved beside the compile cache)"""
from tg.uop.viz.trace import Trace, TraceError, load
from tg.uop.viz.server import serve, serve_forever

__all__ = ["Trace", "TraceError", "load", "serve", "serve_forever"]
