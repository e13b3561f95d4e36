"""tg.uop: the UOp IR core — dtypes, ops, the hash-consed UOp graph, patterns and rewriting, symbolic algebra, spec."""
from tg.uop.helpers import Context, ContextVar, EnvError, Timing, getenv, cache_db_path, DEBUG, SPEC, prod, dedup, flatten, all_same, all_int, \
  cdiv, round_up
from tg.uop.dtype import DType, PtrDType, AddrSpace, dtypes, least_upper_dtype, least_upper_float, sum_acc_dtype, to_dtype, truncate
from tg.uop.ops import Ops, GroupOp, AxisType, KernelInfo, exec_alu, python_alu, threefry2x32_words
from tg.uop.uop import UOp, NONTEMPORAL, Invalid, UndecidableError, exec_uop, simplify_size
from tg.uop.rewrite import UPat, PatternMatcher, graph_rewrite, graph_rewrite_map, RewriteLoop
from tg.uop.upat_compile import guard, GuardError
from tg.uop import track
from tg.uop.track import VIZ
from tg.uop.symbolic import symbolic, symbolic_simple, simplify_given_valid, split_and, split_terms, build_sum
from tg.uop.view import flat_index, unflat_index, move_index, view_index
from tg.uop.floatconv import round_half_even, bf16_bits_to_f32, f32_to_bf16_bits, fp8_bits_to_f32, f32_to_fp8_bits
from tg.uop.spec import type_verify, tensor_spec, kernel_spec, program_spec, SpecError

__all__ = ["Context", "ContextVar", "EnvError", "Timing", "getenv", "cache_db_path", "DEBUG", "SPEC", "prod", "dedup", "flatten", "all_same",
           "all_int", "cdiv", "round_up",
           "DType", "PtrDType", "AddrSpace", "dtypes", "least_upper_dtype", "least_upper_float", "sum_acc_dtype", "to_dtype", "truncate",
           "Ops", "GroupOp", "AxisType", "KernelInfo", "exec_alu", "python_alu", "threefry2x32_words", "UOp", "NONTEMPORAL", "Invalid",
           "UndecidableError", "exec_uop", "simplify_size",
           "UPat", "PatternMatcher", "graph_rewrite", "graph_rewrite_map", "RewriteLoop", "guard", "GuardError", "VIZ", "track",
           "symbolic", "symbolic_simple", "simplify_given_valid", "split_and", "split_terms", "build_sum",
           "flat_index", "unflat_index", "move_index", "view_index", "type_verify", "tensor_spec", "kernel_spec", "program_spec", "SpecError",
           "round_half_even", "bf16_bits_to_f32", "f32_to_bf16_bits", "fp8_bits_to_f32", "f32_to_fp8_bits"]
