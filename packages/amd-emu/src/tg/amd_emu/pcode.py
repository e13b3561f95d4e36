"""A parser for AMD's instruction pseudocode (the `pcode` of the ISA tables) into a small tuple AST.

Expressions are C-like with AMD's additions: typed views (`S0.f32`), sized literals and casts (`16'4`, `32'I(x)`),
bit slices (`x[31 : 16]`, `x[i +: 4]`), concatenation (`{ a, b }`), `**`, `<>`. Statements are assignments (also to
slices and concatenations), `if/elsif/else/endif`, `for i in a : b do ... endfor`, `declare`, `break`, lambdas.
AST nodes are tuples whose first item names the node; `parse` raises PcodeError on text it does not understand.
"""
from __future__ import annotations
import functools
import re

class PcodeError(ValueError): pass

TOKEN = re.compile(r"""
  (?P<comment>//[^\n]*)
  |(?P<num>\d+'0x[0-9a-fA-F]+[UL]*|\d+'[0-9][0-9.]*[A-Z]*|\d+'[IUFB]|0x[0-9a-fA-F]+[UL]*|\d+\.\d+(?:[eE][-+]?\d+)?F?|\d+[A-Z]*)
  |(?P<id>[A-Za-z_][A-Za-z_0-9]*)
  |(?P<op>\+:|\*\*|<<=|>>=|<<|>>|<=|>=|==|!=|<>|&&|\|\||\+=|-=|\*=|\|=|&=|\^=|[-+*/%&|^~!<>=?:()\[\]{},.;])
  |(?P<nl>\n)|(?P<ws>[ \t\r]+)
""", re.X)

def tokenize(text: str) -> list[str]:
  """Tokens, with line ends as `;` except inside brackets (a lambda's parenthesised body keeps its line ends)."""
  out: list[str] = []
  stack: list[bool] = []  # per open bracket: does a line end separate statements inside it?
  pos = 0
  while pos < len(text):
    m = TOKEN.match(text, pos)
    if m is None: raise PcodeError(f"unexpected character {text[pos]!r} in pseudocode")
    pos = m.end()
    if m.lastgroup in ("ws", "comment"): continue
    tok = m.group()
    if m.lastgroup == "nl":
      if stack and not stack[-1]: continue
      tok = ";"
    elif tok in "([{": stack.append(tok == "(" and len(out) >= 2 and out[-1] == ")" and "lambda" in out[-6:])
    elif tok in ")]}" and stack: stack.pop()
    if tok == ";" and (not out or out[-1] in (";", "(")): continue
    out.append(tok)
  return out

def literal(tok: str) -> tuple:
  """('lit', value, kind, width, weak, hex): `16'4` is a 16-bit int, `2.0F` an f32; a bare `1` or `0.5` is weak (it takes
  the type of the other operand)."""
  width = None
  if "'" in tok:
    w, tok = tok.split("'", 1)
    width = int(w)
  body = tok if tok.startswith("0x") and not tok.endswith(("U", "L")) else tok.rstrip("UILF")
  suffix = tok[len(body):]
  if "." in body:
    strong = width is not None or suffix == "F"
    return ("lit", float(body), "f", width or (32 if suffix == "F" else 64), not strong, False)
  val = int(body, 0)
  if "LL" in suffix: width = width or 64
  elif suffix or width: width = width or 32
  return ("lit", val, "u" if "U" in suffix else "i", width or 32, width is None, body.startswith("0x"))

class Parser:
  def __init__(self, toks: list[str]):
    self.t, self.i = toks, 0

  def peek(self, k: int = 0) -> str | None: return self.t[self.i + k] if self.i + k < len(self.t) else None

  def next(self) -> str:
    if self.i >= len(self.t): raise PcodeError("unexpected end of pseudocode")
    self.i += 1
    return self.t[self.i - 1]

  def expect(self, tok: str) -> None:
    got = self.next()
    if got != tok: raise PcodeError(f"expected {tok!r}, got {got!r}")

  def skip_semis(self) -> None:
    while self.peek() == ";": self.i += 1

  # ***** statements *****
  def block(self, ends: tuple[str, ...]) -> list:
    out = []
    self.skip_semis()
    while self.peek() is not None and self.peek() not in ends:
      out.append(self.stmt())
      self.skip_semis()
    return out

  def stmt(self) -> tuple:
    t = self.peek()
    if t == "if": return self.if_stmt()
    if t == "for":
      self.next(); var = self.next(); self.expect("in")
      lo = self.expr(); self.expect(":"); hi = self.expr(); self.expect("do")
      body = self.block(("endfor",)); self.expect("endfor")
      return ("for", var, lo, hi, body)
    if t == "declare":
      self.next(); name = self.next(); self.expect(":")
      ty = self.next()
      m = re.fullmatch(r"(\d+)'([IUFB])", ty)
      if m is None: raise PcodeError(f"bad declared type {ty!r}")
      count = None
      if self.peek() == "[": self.next(); count = int(self.next()); self.expect("]")
      return ("declare", name, m.group(2).lower(), int(m.group(1)), count)
    if t == "break": self.next(); return ("break",)
    if t == "return": self.next(); return ("return", self.expr())
    if t == "nop" and self.peek(1) == "(": self.next(); self.expect("("); self.expect(")"); return ("nop",)
    if self.peek(1) == "=" and self.peek(2) == "lambda": return self.lambda_stmt()
    target = self.expr()
    if target[0] == "call" and self.peek() in (";", None): return ("nop",)  # a call for its effect: s_nop(...), waits
    op = self.next()
    if op not in ("=", "+=", "-=", "*=", "|=", "&=", "^=", "<<=", ">>="):
      raise PcodeError(f"expected an assignment, got {op!r}")
    val = self.expr()
    if op != "=": val = ("bin", op[:-1], target, val)
    return ("assign", target, val)

  def if_stmt(self) -> tuple:
    arms = []
    self.expect("if")
    while True:
      cond = self.expr(); self.expect("then")
      arms.append((cond, self.block(("elsif", "else", "endif"))))
      t = self.next()
      if t == "elsif": continue
      if t == "else": arms.append((None, self.block(("endif",)))); self.expect("endif")
      elif t != "endif": raise PcodeError(f"unterminated if: {t!r}")
      return ("if", arms)

  def lambda_stmt(self) -> tuple:
    name = self.next(); self.expect("="); self.expect("lambda"); self.expect("(")
    params = []
    while self.peek() != ")":
      params.append(self.next())
      if self.peek() == ",": self.next()
    self.expect(")"); self.expect("(")
    self.skip_semis()
    if self.peek() in ("if", "return", "for", "declare"): body = self.block((")",))
    else: body = [("return", self.expr())]
    self.skip_semis(); self.expect(")")
    return ("lambda", name, tuple(params), body)

  # ***** expressions *****
  BIN = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!=", "<>"), ("<", "<=", ">", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
         ("**",)]

  def expr(self) -> tuple:
    c = self.binary(0)
    if self.peek() == "?":
      self.next(); a = self.expr(); self.expect(":"); b = self.expr()
      return ("?", c, a, b)
    return c

  def binary(self, level: int) -> tuple:
    if level == len(self.BIN): return self.unary()
    lhs = self.binary(level + 1)
    while self.peek() in self.BIN[level]:
      op = self.next()
      lhs = ("bin", op, lhs, self.binary(level + 1))
    return lhs

  def unary(self) -> tuple:
    t = self.peek()
    if t in ("-", "!", "~", "+"):
      self.next()
      return ("un", t, self.unary())
    return self.postfix(self.primary())

  def primary(self) -> tuple:
    t = self.next()
    if t == "(":
      e = self.expr(); self.expect(")")
      return e
    if t == "{":
      parts = [self.expr()]
      while self.peek() == ",": self.next(); parts.append(self.expr())
      self.expect("}")
      return ("cat", tuple(parts))
    m = re.fullmatch(r"(\d+)'([IUFB])", t)
    if m:
      self.expect("("); e = self.expr(); self.expect(")")
      return ("cast", m.group(2).lower(), int(m.group(1)), e)
    if t[0].isdigit(): return literal(t)
    if re.fullmatch(r"[A-Za-z_]\w*", t):
      if self.peek() == "(":
        self.next()
        args = []
        while self.peek() != ")":
          args.append(self.expr())
          if self.peek() == ",": self.next()
        self.expect(")")
        return ("call", t, tuple(args))
      return ("name", t)
    raise PcodeError(f"unexpected token {t!r}")

  def postfix(self, e: tuple) -> tuple:
    while True:
      t = self.peek()
      if t == ".":
        self.next(); e = ("field", e, self.next())
      elif t == "[":
        self.next()
        a = self.expr()
        if self.peek() == ":": self.next(); b = self.expr(); e = ("slice", e, a, b)
        elif self.peek() == "+:": self.next(); w = self.expr(); e = ("slicew", e, a, w)
        else: e = ("idx", e, a)
        self.expect("]")
      else: return e

@functools.cache
def parse(text: str) -> tuple:
  """The statements of a pseudocode text, as a tuple."""
  p = Parser(tokenize(text))
  out = p.block(())
  if p.peek() is not None: raise PcodeError(f"unexpected {p.peek()!r}")
  return tuple(out)
