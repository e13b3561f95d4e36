"""tg.amd_emu.sqtt's decoder and timeline against real hardware captures and hand-built streams."""
import pathlib
import pytest
from hypothesis import given, settings, strategies as st
from tg.amd_emu.sqtt import SQTTError, Code, decode, timeline
from tg.amd_emu.sqtt.capture import load
from tg.amd_emu.sqtt.encode import Writer
from tg.amd_emu.sqtt.format import layout

CAPTURES = sorted(p for p in (pathlib.Path(__file__).parent / "sqtt_captures").glob("gfx*/*") if p.is_dir())
CAPTURES_BY = {(p.parent.name, p.name): p for p in CAPTURES}
LAYOUT = {"rdna3": 3, "rdna4": 4}

def test_captures_are_there():
  assert {p.parent.name for p in CAPTURES} == {"gfx1100", "gfx1200"} and len(CAPTURES) == 12

@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_capture_structure(path):
  """Header first, times never decrease, every wave that starts ends; gemm's traced SEs have instruction packets."""
  nwaves, traced = 0, {}
  for blob in load(path):
    packets = decode(blob.data, blob.arch)
    assert packets[0].name == "LAYOUT_HEADER" and packets[0].fields()["layout"] == LAYOUT[blob.arch]
    times = [p.time for p in packets]
    assert times == sorted(times) and times[0] == 0
    waves = timeline(packets)
    nwaves += len(waves)
    assert all(w.end is not None and w.end >= w.start for w in waves)
    names = {p.name for p in packets}
    if blob.itrace: traced.setdefault(blob.code.text_addr + blob.base, set()).update(names)
    if not blob.itrace: assert not names & {"INST", "VALUINST", "IMMEDIATE", "IMMEDIATE_MASK", "ALUEXEC", "VMEMEXEC"}
  if "gemm" in path.name:  # each of the three kernels has instruction packets from its traced SEs
    assert len(traced) == 3 and all({"INST", "VALUINST", "IMMEDIATE"} <= names for names in traced.values())
  assert nwaves == (1 if "gemm" not in path.name else 72)  # empty/plus: one wave; gemm: 32 + 32 + 8 waves

@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_capture_instructions_map_to_code(path):
  """Walking the code object: every instruction packet lands on an instruction of the class it reports, every traced
  wave ends on s_endpgm, and each traced wave of one kernel runs the same instructions."""
  paths: dict[int, set] = {}  # code object -> the pc sequences its traced waves ran
  for blob in load(path):
    if not blob.itrace: continue
    for w in timeline(decode(blob.data, blob.arch), Code(blob.code)):
      assert all(i.matches for i in w.issues), [(i.text, i.packet, i.op) for i in w.issues if not i.matches]
      if w.ended_on_endpgm is not None:
        assert w.ended_on_endpgm
        paths.setdefault(id(blob.code), set()).add(tuple(i.pc for i in w.issues))
        assert [i.time for i in w.issues] == sorted(i.time for i in w.issues) and all(i.stall >= 0 for i in w.issues)
  if "gemm" in path.name:  # the matmul's 36 traced waves all take the same loop trip count
    assert any(len(pcs) == 1 and len(next(iter(pcs))) > 1000 for pcs in paths.values())

def test_hand_built_stream():
  """LAYOUT_HEADER (layout 3), TS_DELTA_SHORT delta 5 (adds 5 + 8), VALUINST delta 2 wave 5, then NOP filler."""
  blob = bytes.fromhex("9101000000000000" "58" "9302" + "00" * 8)
  ps = decode(blob, "rdna3")
  assert [(p.name, p.time, p.offset) for p in ps[:3]] == [("LAYOUT_HEADER", 0, 0), ("TS_DELTA_SHORT", 13, 16), ("VALUINST", 15, 18)]
  assert ps[2].wave == 5 and ps[2].delta == 2 and ps[2].flag == 0
  assert {p.name for p in ps[3:]} == {"NOP"} and ps[-1].offset + 16 <= 2 * len(blob) < ps[-1].offset + 17

def test_marker_adds_no_time():
  """TS_DELTA_OR_MARK (low 7 bits 0x01, 12 nibbles on layout 3): delta 1000 at bits 12-47 counts unless bit9=1, bit8=0."""
  def stream(bits98: int) -> bytes:
    pkt = 0x01 | bits98 << 8 | 1000 << 12
    nib = [1, 9, 1] + [0] * 13 + [pkt >> 4 * i & 0xf for i in range(12)] + [0] * 16
    return bytes(nib[i] | nib[i + 1] << 4 for i in range(0, len(nib), 2))
  assert [p.time for p in decode(stream(0b00), "rdna3") if p.name == "TS_DELTA_OR_MARK"] == [1000]
  assert [p.time for p in decode(stream(0b10), "rdna3") if p.name == "TS_DELTA_OR_MARK"] == [0]

@pytest.mark.parametrize("blob, arch, msg", [
  (b"\x91\x01\x00", "rdna3", "truncated SQTT stream: 3 bytes.*byte offset 0"),
  (bytes(16), "rdna3", "byte offset 0 holds 0x00, not a LAYOUT_HEADER"),
  (bytes.fromhex("9101000000000000") + bytes(8), "rdna4", "says layout 3, but rdna4 writes layout 4"),
  (bytes.fromhex("1103000000000000") + bytes(8), "rdna3", "byte offset 0 names layout 6"),
  (bytes(16), "gfx950", "unknown arch 'gfx950'"),
])
def test_bad_input(blob, arch, msg):
  with pytest.raises(SQTTError, match=msg): decode(blob, arch)

def test_reencoding_gives_the_captures_back():
  """Writing every decoded packet again from its fields (and delta) reproduces each blob bit for bit, past the header
  (whose bits beyond `layout` have no known meaning): the field tables cover every bit the hardware writes."""
  for path in (p for p in CAPTURES if p.name.endswith("run_0")):
    for blob in load(path):
      packets = decode(blob.data, blob.arch)
      w = Writer(blob.arch)
      for p in packets[1:]: w.put(p.name, p.fields())
      end = packets[-1].offset + packets[-1].type.size
      assert nibbles(w.bytes())[16:end] == nibbles(blob.data)[16:end]

def nibbles(b: bytes) -> list[int]: return [x >> s & 0xf for x in b for s in (0, 4)]

def empty_kernel():
  return next(b for p in CAPTURES if p.name == "empty_run_0" and p.parent.name == "gfx1100" for b in load(p) if b.se == 0)

def test_walk_off_the_code_is_an_error():
  """More instruction packets than the wave's code holds: the walk leaves .text, a clear SQTTError."""
  blob = empty_kernel()
  w = Writer("rdna3")
  w.put("WAVESTART", {"wave": 0, "simd": 0, "cu_lo": 0}, time=10)
  for t in range(2000): w.put("VALUINST", {"wave": 0}, time=11 + t)
  with pytest.raises(SQTTError, match="the walk left the code: pc 0x.* is outside .text"): timeline(decode(w.bytes(), "rdna3"), Code(blob.code))
  w = Writer("rdna3")
  w.put("VALUINST", {"wave": 3}, time=5)
  with pytest.raises(SQTTError, match="VALUINST at byte offset 8 reports wave slot 3, but no wave runs there"):
    timeline(decode(w.bytes(), "rdna3"), Code(blob.code))

@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, 4832), arch_blob=st.sampled_from([("rdna3", "gfx1100"), ("rdna4", "gfx1200")]))
def test_truncated_capture_decodes_its_prefix(cut, arch_blob):
  """A capture cut anywhere: the packets whose window is still inside come out exactly as in the whole capture (times
  included), or the blob is too short for one window and the error says so."""
  arch, target = arch_blob
  blob = next(b for b in load(CAPTURES_BY[target, "plus_run_0"]) if b.se == 0)
  whole = decode(blob.data, arch)
  if cut < 8:
    with pytest.raises(SQTTError, match="truncated"): decode(blob.data[:cut], arch)
    return
  part = decode(blob.data[:cut], arch)
  assert part == whole[:len(part)] and (len(part) == len(whole) or part[-1].offset + 16 <= 2 * cut < whole[len(part)].offset + 16)

@settings(max_examples=100, deadline=None)
@given(data=st.binary(min_size=0, max_size=200), arch=st.sampled_from(["rdna3", "rdna4"]))
def test_random_bytes_decode_or_raise_sqtt_error(data, arch):
  """Any bytes, with or without a valid header in front: packets with non-decreasing times, or an SQTTError; and a
  timeline of whatever decodes never fails."""
  for blob in (data, bytes.fromhex("9101000000000000" if arch == "rdna3" else "1102000000000000") + data):
    try: packets = decode(blob, arch)
    except SQTTError: continue
    assert [p.time for p in packets] == sorted(p.time for p in packets)
    timeline(packets)

# packet types with time and disjoint fields (REG's slot and hi_byte overlap)
TIMED = ["VALUINST", "INST", "IMMEDIATE", "IMMEDIATE_MASK", "WAVESTART", "WAVEEND", "ALUEXEC", "VMEMEXEC", "WAVERDY", "EVENT"]

@st.composite
def packet_lists(draw):
  arch = draw(st.sampled_from(["rdna3", "rdna4"]))
  lay = layout(LAYOUT[arch])
  out, time = [], 0
  for _ in range(draw(st.integers(0, 40))):
    t = lay.by_name[draw(st.sampled_from(TIMED))]
    time += draw(st.one_of(st.integers(0, 30), st.integers(0, 1 << 34)))
    fields = {n: draw(st.integers(0, (1 << w) - 1)) for n, _, w in t.fields if n != "delta"}
    out.append((t.name, time, fields))
  return arch, out

@settings(max_examples=60, deadline=None)
@given(case=packet_lists())
def test_written_streams_decode_to_their_packets(case):
  """Packets written at absolute times (gaps of any size: the writer adds TS_DELTA_SHORT / TS_DELTA_OR_MARK packets
  where a packet's own delta field is too small) decode to the same packets, fields and times."""
  arch, packets = case
  w = Writer(arch)
  for name, time, fields in packets: w.put(name, fields, time=time)
  got = [(p.name, p.time, {k: v for k, v in p.fields().items() if k != "delta"}) for p in decode(w.bytes(), arch)
         if p.name not in ("LAYOUT_HEADER", "NOP", "TS_DELTA_SHORT", "TS_DELTA_OR_MARK")]
  assert got == packets
