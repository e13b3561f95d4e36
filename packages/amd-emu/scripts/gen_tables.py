"""Generate tg.amd_emu's ISA tables from the shared RDNA3/RDNA4 json data.

The shared data lives outside the package (../shared/isa relative to the repo); the wheel must not need it,
so this script distills it into one compact json file per arch under src/tg/amd_emu/tables/, committed.
Run: uv run python packages/amd-emu/scripts/gen_tables.py
"""
from __future__ import annotations
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
SHARED = HERE.parents[2] / ".." / "shared" / "isa"
OUT = HERE.parent / "src" / "tg" / "amd_emu" / "tables"

def field_row(f: dict) -> list:
  """[name, lo, width, kind, extra]: extra is the fixed value, the enum name, or the default when left out."""
  extra = f.get("value", f.get("enum", f.get("default", f.get("default_reg"))))
  return [f["name"], f["lo"], f["hi"] - f["lo"] + 1, f["kind"], extra]

# opcodes the data lists without operands that LLVM (and the hardware) give operands: [bits, data format, operand type]
SDST, SSRC0 = {"sdst": [32, "FMT_NUM_B32", "OPR_SDST"]}, {"ssrc0": [32, "FMT_NUM_B32", "OPR_SSRC"]}
LABEL = {"simm16": [16, "FMT_NUM_I16", "OPR_LABEL"]}
MISSING_OPERANDS = {"S_BARRIER_INIT": SSRC0, "S_BARRIER_JOIN": SSRC0, "S_GET_BARRIER_STATE": SDST | SSRC0,
                    "S_WAITCNT": {"simm16": [16, "FMT_NUM_B16", "OPR_WAITCNT"]}, "S_SUBVECTOR_LOOP_BEGIN": SDST | LABEL,
                    "S_SUBVECTOR_LOOP_END": SDST | LABEL}

def convert(src: dict) -> dict:
  formats, owners = {}, {}
  for name, fmt in sorted(src["formats"].items()):
    formats[name] = [fmt["bytes"], [field_row(f) for f in fmt["fields"]]]
    for f in fmt["fields"]:
      if f["kind"] == "opcode":
        for op in f.get("allowed", []): owners.setdefault(f"{f['enum']}.{op}", []).append(name)
  ops: dict[str, list] = {}
  for enum, members in sorted(src["enums"].items()):
    if enum in ("HWREG", "MSG"): continue
    for op, num in sorted(members.items()):
      key = f"{enum}.{op}"
      fmts = owners.get(key, ["VOPD", "VOPD_LIT"] if enum == "VOPDOp" else [])
      if not fmts or (op in ops and not enum.endswith("GLOBALOp")): continue  # GLOBAL_* also listed under FLATOp: keep GLOBAL's
      base = [f for f in fmts if "_LIT" not in f and "_DPP" not in f] or fmts
      base = "VOP3_SDST" if "VOP3_SDST" in base else base[0]  # V_CMPX_*_E64 writes EXEC through the scalar vdst
      names = {r[0] for r in formats[base][1]}
      operands = {k: list(v) for k, v in MISSING_OPERANDS.get(op, {}).items()}
      for fld, (dfmt, bits, otype) in src["operands"].get(key, {}).items():
        # the XML calls some VOP3 sources vsrc0; the encoding field is src0
        operands["src0" if fld == "vsrc0" and fld not in names else fld] = [bits, dfmt, otype]
      if "ATOMIC_CMPSWAP" in op and "vdst" in operands:  # the data holds compare+swap values; the old value is half of it
        data = operands.get("data", operands.get("vsrc"))
        operands["vdst"][0] = data[0] // 2
      ops[op] = [enum, num, base, sorted(f for f in fmts if f != base), operands]
  pcode = {k.split(".", 1)[1]: v for k, v in sorted(src["pcode"].items())}
  return {"arch": src["arch"], "formats": formats, "ops": ops, "hwreg": src["enums"]["HWREG"], "msg": src["enums"]["MSG"], "pcode": pcode}

def main() -> None:
  OUT.mkdir(parents=True, exist_ok=True)
  for arch in ("rdna3", "rdna4"):
    data = convert(json.loads((SHARED / f"{arch}.json").read_text()))
    (OUT / f"{arch}.json").write_text(json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"{arch}: {len(data['formats'])} formats, {len(data['ops'])} ops")

if __name__ == "__main__":
  main()
