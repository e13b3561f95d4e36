"""python -m tg.uop.viz [trace.pkl] [--port N]: serve a saved VIZ trace."""
import argparse, sys
from tg.uop.track import trace_path
from tg.uop.viz import TraceError, load, serve_forever

def main() -> None:
  ap = argparse.ArgumentParser(prog="python -m tg.uop.viz", description="Serve a VIZ trace (saved by VIZ=1 or VIZ=-1) in a browser.")
  ap.add_argument("trace", nargs="?", default=None, help=f"the trace file (default: {trace_path()})")
  ap.add_argument("--port", type=int, default=8000, help="first port to try (default 8000)")
  args = ap.parse_args()
  path = args.trace or trace_path()
  try: data = load(path)
  except TraceError as e: sys.exit(f"error: {e}")
  serve_forever({**data, "path": str(path)}, args.port)

if __name__ == "__main__": main()
