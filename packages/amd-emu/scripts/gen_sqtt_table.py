"""Generate tg.amd_emu's SQTT packet table from the shared format description (../shared/amd/sqtt/format.json).

The wheel must not need the shared folder, so this distills the RDNA3 (layout 3) and RDNA4 (layout 4) packet tables,
the time rules and the enums into src/tg/amd_emu/tables/sqtt.json, committed. Two choices are made here, both from the
format's own notes: layout 4's INST is read with the exporter's shifted fields (wave at bits 7-11, an 8-bit RDNA3 InstOp
at 12-19), which the gfx1200 captures fit and tinygrad's reading does not; and its other-SIMD ops are tinygrad's
OTHER_VMEM/UNK_60 carried over to that reading. The dispatch table computed from the match patterns is checked
against the one format.json lists.
Run: uv run python packages/amd-emu/scripts/gen_sqtt_table.py
"""
from __future__ import annotations
import json
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
SHARED = HERE.parents[2] / ".." / "shared" / "amd" / "sqtt" / "format.json"
OUT = HERE.parent / "src" / "tg" / "amd_emu" / "tables" / "sqtt.json"

def marker(cond: str | None) -> list[dict[str, int]]:
  """'(bit9 == 1 and bit8 == 0) or bit7 == 1' -> [{"9": 1, "8": 0}, {"7": 1}]: any alternative whose bits all match."""
  if cond is None: return []
  alts = []
  for alt in cond.split(" or "):
    terms = re.findall(r"bit(\d+) == ([01])", alt)
    if not terms or len(terms) != alt.count("=="): raise ValueError(f"unexpected marker condition {cond!r}")
    alts.append({bit: int(val) for bit, val in terms})
  return alts

def packet(p: dict, layout: str) -> dict:
  fields = p["fields"]
  if layout == "4" and p["name"] == "INST": fields = p["exporter_finding"]["fields"]
  return {"name": p["name"], "type_id": p["type_id"], "mask": p["match"]["mask"], "value": p["match"]["value"],
          "size": p["size_nibbles"], "rule": p["delta_rule"], "marker": marker(p.get("marker_condition")),
          "fields": [[f["name"], f["lo"], f["hi"] - f["lo"] + 1] for f in fields],
          "derived": {d["name"]: d["expr"] for d in p.get("derived", [])}}

def dispatch(packets: list[dict], priority: list[str]) -> list[str]:
  by = {p["name"]: p for p in packets}
  return [next((n for n in priority if b & by[n]["mask"] == by[n]["value"]), "NOP") for b in range(256)]

def convert(src: dict) -> dict:
  enums = {name: {m["name"]: m["value"] for m in members} for name, members in src["enums"].items() if name != "InstOpL4"}
  l4 = {m["name"]: m["value"] for m in src["enums"]["InstOpL4"]}
  layouts = {}
  for key, lay in src["layouts"].items():
    pkts = [packet(p, key) for p in lay["packets"]]
    if dispatch(pkts, lay["match_priority"]) != lay["dispatch_table"]: raise ValueError(f"layout {key}: patterns disagree with dispatch_table")
    if key == "3": other = sorted(enums["InstOp"][n] for n in lay["inst_ops_not_in_traced_stream"])
    else: other = sorted(l4[n] << 1 | lo for n in lay["inst_ops_not_in_traced_stream"] for lo in (0, 1))  # seed op -> shifted op
    layouts[key] = {"packets": pkts, "priority": lay["match_priority"], "other_simd_ops": other}
  return {"source": src["source"], "layouts": layouts, "enums": enums}

def main() -> None:
  data = convert(json.loads(SHARED.read_text()))
  OUT.write_text(json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n")
  print(f"{OUT.name}: " + ", ".join(f"layout {k}: {len(v['packets'])} packets" for k, v in data["layouts"].items()))

if __name__ == "__main__":
  main()
