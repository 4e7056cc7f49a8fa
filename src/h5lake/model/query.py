"""Value queries: ``GET .../value?query=...`` conditions, parsed without ``eval``.

h5pyd's ``Table.read_where(cond)`` sends the condition text as ``query`` (API-NOTES §3); the
answer holds only the matching elements. `query_mask` turns the text into a boolean mask over a
(compound or plain) numpy array. User text is never evaluated: a small tokenizer and a
recursive-descent parser accept only this grammar::

    query   := expr [ "where" expr ] | "where" expr   HSDS's form: both must hold
    expr    := and_expr ( ("|" | "or") and_expr )*          "OR", "AND", "NOT" too
    and_expr:= not_expr ( ("&" | "and") not_expr )*
    not_expr:= ("~" | "not") not_expr | compare
    compare := operand ( cmp_op operand )*             chained: a < x <= b means both hold
             | operand ["not"] "in" "(" literal ("," literal)* [","] ")"
    cmp_op  := "==" | "!=" | "<" | "<=" | ">" | ">="
    operand := NAME | literal | "(" expr ")"
    literal := ["-" | "+"] NUMBER | STRING | b-STRING | "True" | "False"

Decisions, and why:

* Comparisons bind tighter than ``&`` and ``|`` (as in SQL), so ``a == 1 | b < 3`` means
  ``(a == 1) | (b < 3)``, which is what people write. HSDS hands the text to Python, where ``|``
  binds tighter and the same text is a chained comparison; parenthesised queries, the form the
  PyTables-style examples use, mean the same in both.
* A NAME is a field of a compound type (an unknown field is an error). For a non-compound
  dataset every NAME denotes the element value itself, so ``val > 2`` and ``x > 2`` agree.
* A string literal compares against fixed-length byte strings by its UTF-8 encoding and a byte
  literal against unicode fields by decoding, so ``city == 'Boston'`` and ``city == b'Boston'``
  both work on an ``S`` field. Comparing a string with a number is an error, not "all false".
* Every failure, from a stray character to an unsupported comparison, is `InvalidInput`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from h5lake.errors import InvalidInput

BoolArray: TypeAlias = npt.NDArray[np.bool_]
Literal: TypeAlias = int | float | bool | str | bytes

MAX_QUERY_LENGTH = 10_000
MAX_NESTING = 64  # parentheses and negations inside one another
MAX_NUMBER_CHARS = 64

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>[bB]?(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"))
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>==|!=|<=|>=|<|>|&|\||~|\(|\)|,|-|\+)
    """,
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "in", "where", "True", "False"}
_UPPER_KEYWORDS = {"AND", "OR", "NOT"}  # as HSDS's domain queries write them (attr1 > 7 AND ...)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "number" | "string" | "name" | "op" | "kw" | "end"
    text: str
    pos: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise InvalidInput(f"query: unexpected character {text[pos]!r} at position {pos}")
        kind = m.lastgroup or ""
        if kind != "ws":
            word = m.group()
            if kind == "name" and word in _KEYWORDS:
                kind = "kw"
            elif kind == "name" and word in _UPPER_KEYWORDS:
                kind, word = "kw", word.lower()
            tokens.append(_Token(kind, word, pos))
        pos = m.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


# --- the parsed tree ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Name:
    name: str


@dataclass(frozen=True, slots=True)
class _Const:
    value: Literal


@dataclass(frozen=True, slots=True)
class _Compare:
    op: str
    left: _Node
    right: _Node


@dataclass(frozen=True, slots=True)
class _In:
    operand: _Node
    values: tuple[Literal, ...]
    negate: bool


@dataclass(frozen=True, slots=True)
class _Bool:
    op: str  # "&" | "|"
    operands: tuple[_Node, ...]  # flat, so a long chain is a wide node, not a deep one


@dataclass(frozen=True, slots=True)
class _Not:
    operand: _Node


_Node: TypeAlias = _Name | _Const | _Compare | _In | _Bool | _Not

_CMP_OPS = {"==", "!=", "<", "<=", ">", ">="}


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0

    def _nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self._error(f"more than {MAX_NESTING} parentheses or negations inside one another")

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def _accept(self, *texts: str) -> bool:
        if self.tok.kind in ("op", "kw") and self.tok.text in texts:
            self.i += 1
            return True
        return False

    def _expect(self, text: str) -> None:
        if not self._accept(text):
            raise self._error(f"expected {text!r}")

    def _error(self, what: str) -> InvalidInput:
        t = self.tok
        found = "end of query" if t.kind == "end" else repr(t.text)
        return InvalidInput(f"query: {what}, found {found} at position {t.pos}")

    def parse(self) -> _Node:
        if self._accept("where"):
            node = self._or()
        else:
            node = self._or()
            if self._accept("where"):
                node = _Bool("&", (node, self._or()))
        if self.tok.kind != "end":
            raise self._error("expected an operator or the end")
        return node

    def _or(self) -> _Node:
        nodes = [self._and()]
        while self._accept("|", "or"):
            nodes.append(self._and())
        return nodes[0] if len(nodes) == 1 else _Bool("|", tuple(nodes))

    def _and(self) -> _Node:
        nodes = [self._not()]
        while self._accept("&", "and"):
            nodes.append(self._not())
        return nodes[0] if len(nodes) == 1 else _Bool("&", tuple(nodes))

    def _not(self) -> _Node:
        if self._accept("~", "not"):
            self._nest()
            node = _Not(self._not())
            self.depth -= 1
            return node
        return self._compare()

    def _compare(self) -> _Node:
        left = self._operand()
        if self.tok.kind == "kw" and self.tok.text in ("in", "not"):
            negate = self._accept("not")
            self._expect("in")
            return _In(left, self._literal_list(), negate)
        chain: list[_Node] = []
        while self.tok.kind == "op" and self.tok.text in _CMP_OPS:
            op = self.tok.text
            self.i += 1
            right = self._operand()
            chain.append(_Compare(op, left, right))
            left = right
        if not chain:
            return left
        return chain[0] if len(chain) == 1 else _Bool("&", tuple(chain))

    def _literal_list(self) -> tuple[Literal, ...]:
        self._expect("(")
        values = [self._literal()]
        while self._accept(","):
            if self.tok.kind == "op" and self.tok.text == ")":
                break
            values.append(self._literal())
        self._expect(")")
        return tuple(values)

    def _operand(self) -> _Node:
        if self._accept("("):
            self._nest()
            node = self._or()
            self._expect(")")
            self.depth -= 1
            return node
        if self.tok.kind == "name":
            name = self.tok.text
            self.i += 1
            return _Name(name)
        return _Const(self._literal())

    def _literal(self) -> Literal:
        t = self.tok
        sign = 1
        if t.kind == "op" and t.text in "+-":
            sign = -1 if t.text == "-" else 1
            self.i += 1
            t = self.tok
            if t.kind != "number":
                raise self._error("expected a number after a sign")
        if t.kind == "number":
            if len(t.text) > MAX_NUMBER_CHARS:
                raise self._error(f"a number of more than {MAX_NUMBER_CHARS} characters")
            self.i += 1
            is_float = any(ch in t.text for ch in ".eE")
            return sign * (float(t.text) if is_float else int(t.text))
        if t.kind == "string":
            self.i += 1
            return _unquote(t.text, t.pos)
        if t.kind == "kw" and t.text in ("True", "False"):
            self.i += 1
            return t.text == "True"
        raise self._error("expected a field name or a value")


_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "0": "\0"}


def _unquote(token: str, pos: int) -> str | bytes:
    """The value of a quoted string token (``'..'``, ``".."``, ``b'..'``), with simple escapes."""
    is_bytes = token[0] in "bB"
    body = token[2:-1] if is_bytes else token[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1]  # the tokenizer guarantees a character follows a backslash
            if nxt not in _ESCAPES:
                raise InvalidInput(f"query: unsupported escape '\\{nxt}' at position {pos}")
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(ch)
            i += 1
    text = "".join(out)
    if not is_bytes:
        return text
    try:
        return text.encode("ascii")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"query: a bytes literal must be ASCII, at position {pos}") from exc


def parse_query(text: str) -> Callable[[np.ndarray], BoolArray]:
    """Parse ``text`` once; return a function computing the mask for an array.

    Raises `InvalidInput` for a syntax error; errors that depend on the data (unknown field,
    incomparable types) are raised when the function is applied.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("query must be a non-empty string")
    if len(text) > MAX_QUERY_LENGTH:
        raise InvalidInput(f"query is longer than {MAX_QUERY_LENGTH} characters")
    tree = _Parser(text).parse()

    def mask(arr: np.ndarray) -> BoolArray:
        return _Evaluator(arr).boolean(tree)

    return mask


def update_fields(current: np.ndarray, changes: dict[str, Any]) -> np.ndarray:
    """A copy of the compound elements ``current`` with the fields of ``changes`` set, as a
    query update asks (``{"value": {field: value}}``). A value that does not fit its field's type
    (a string for a number, a list for a scalar, an integer out of range) is `InvalidInput`."""
    names = current.dtype.names or ()
    updated = current.copy()
    for name, value in changes.items():
        if name not in names:
            raise InvalidInput(f"no field {name!r} in the compound type")
        field_type = current.dtype[name]
        try:
            if isinstance(value, (list, dict)) and field_type.subdtype is None:
                raise ValueError("a list or object for a scalar field")
            if field_type.kind in "iu":
                if not isinstance(value, int):
                    raise ValueError("not an integer")
                info = np.iinfo(field_type)
                if not info.min <= value <= info.max:
                    raise ValueError(f"outside {info.min}..{info.max}")
            converted = np.asarray(value, dtype=field_type)
            updated[name] = converted
        except (ValueError, TypeError, OverflowError) as exc:
            raise InvalidInput(f"query update: {_clip_value(value)} does not fit field {name!r} ({field_type}): {exc}") from None
    return updated


def _clip_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def query_mask(expr: str, arr: np.ndarray) -> BoolArray:
    """A boolean array of ``arr.shape``: True where the element satisfies ``expr``."""
    return parse_query(expr)(arr)


# --- evaluation ---------------------------------------------------------------------------------


class _Evaluator:
    def __init__(self, arr: np.ndarray) -> None:
        self.arr = np.asarray(arr)

    def field(self, name: str) -> np.ndarray:
        names = self.arr.dtype.names
        if names is None:
            return self.arr
        if name not in names:
            raise InvalidInput(f"query: unknown field {name!r} (fields: {', '.join(names)})")
        field_type = self.arr.dtype[name]
        if field_type.names is not None or field_type.subdtype is not None:
            raise InvalidInput(f"query: field {name!r} is not a scalar type and cannot be compared")
        return self.arr[name]

    def boolean(self, node: _Node) -> BoolArray:
        if isinstance(node, _Bool):
            combine = np.logical_and if node.op == "&" else np.logical_or
            result = self.boolean(node.operands[0])
            for operand in node.operands[1:]:
                result = combine(result, self.boolean(operand))
            return np.asarray(result, dtype=np.bool_)
        if isinstance(node, _Not):
            return np.logical_not(self.boolean(node.operand))
        if isinstance(node, _Compare):
            return self.compare(node.op, node.left, node.right)
        if isinstance(node, _In):
            values = self.value(node.operand)
            if not isinstance(values, np.ndarray):
                raise InvalidInput("query: 'in' needs a field or value name on its left")
            hit = np.zeros(values.shape, dtype=np.bool_)
            for lit in node.values:
                hit |= _compare_array(values, "==", lit)
            return ~hit if node.negate else hit
        if isinstance(node, _Name):
            value = self.field(node.name)
            if value.dtype != np.bool_:
                raise InvalidInput(f"query: {node.name!r} is not boolean; compare it to a value")
            return np.asarray(value, dtype=np.bool_)
        raise InvalidInput("query: a constant alone is not a condition")

    def value(self, node: _Node) -> np.ndarray | Literal:
        if isinstance(node, _Name):
            return self.field(node.name)
        if isinstance(node, _Const):
            return node.value
        return self.boolean(node)

    def compare(self, op: str, left_node: _Node, right_node: _Node) -> BoolArray:
        left, right = self.value(left_node), self.value(right_node)
        if isinstance(left, np.ndarray):
            if isinstance(right, np.ndarray):
                return _compare_arrays(left, op, right)
            return _compare_array(left, op, right)
        if isinstance(right, np.ndarray):
            return _compare_array(right, _FLIPPED[op], left)
        raise InvalidInput("query: a comparison needs a field or value name on one side")


_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}


def _compare_array(values: np.ndarray, op: str, lit: Literal) -> BoolArray:
    """Compare an array with one literal after making their kinds agree (see module notes)."""
    kind = values.dtype.kind
    operand: Any
    if kind in "biuf":
        if isinstance(lit, (str, bytes)):
            raise InvalidInput(f"query: cannot compare a numeric value with {lit!r}")
        operand = lit
    elif kind == "S":
        if not isinstance(lit, (str, bytes)):
            raise InvalidInput(f"query: cannot compare a string value with {lit!r}")
        operand = np.bytes_(lit.encode("utf-8") if isinstance(lit, str) else lit)
    elif kind == "U":
        if not isinstance(lit, (str, bytes)):
            raise InvalidInput(f"query: cannot compare a string value with {lit!r}")
        operand = lit.decode("utf-8", "replace") if isinstance(lit, bytes) else lit
    elif kind == "O":
        return _compare_objects(values, op, lit)
    else:
        raise InvalidInput(f"query: values of type {values.dtype} cannot be compared")
    try:
        return np.asarray(_OPS[op](values, operand), dtype=np.bool_)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInput(f"query: cannot compare {values.dtype} values with {lit!r}") from exc


def _compare_objects(values: np.ndarray, op: str, lit: Literal) -> BoolArray:
    """Variable-length strings arrive as object arrays of str or bytes; compare as text."""
    if not isinstance(lit, (str, bytes)):
        raise InvalidInput(f"query: cannot compare a string value with {lit!r}")
    text = lit.decode("utf-8", "replace") if isinstance(lit, bytes) else lit

    def as_text(v: Any) -> str:
        if isinstance(v, bytes):
            return v.decode("utf-8", "replace")
        if isinstance(v, str):
            return v
        raise InvalidInput("query: only variable-length strings can be compared")

    as_str = np.frompyfunc(as_text, 1, 1)(values).astype(np.str_) if values.size else values
    return np.asarray(_OPS[op](as_str.astype(np.str_), text), dtype=np.bool_)


def _compare_arrays(left: np.ndarray, op: str, right: np.ndarray) -> BoolArray:
    """Field against field: both numeric, or both fixed strings of the same kind."""
    lk, rk = left.dtype.kind, right.dtype.kind
    if not (lk in "biuf" and rk in "biuf" or lk == rk and lk in "SU"):
        raise InvalidInput(f"query: cannot compare {left.dtype} with {right.dtype}")
    return np.asarray(_OPS[op](left, right), dtype=np.bool_)
