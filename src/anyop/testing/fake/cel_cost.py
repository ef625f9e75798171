"""The estimated cost of a CEL rule, as kube-apiserver estimates it when a CRD is written.

Pure. :func:`estimated_cost` is cel-go's ``checker.Cost`` (``checker/cost.go``) with
Kubernetes' estimator (k8s.io/apiserver ``pkg/cel/library/cost.go``, and the size estimator
of ``apiextensions-apiserver``'s ``schema/cel/compilation.go``): 1 an identifier or select,
each call 1 unless priced by the sizes it traverses (string concatenation, comparison,
``matches``, ``contains``, ``startsWith``, ``in``; the libraries' functions), a comprehension
its range's size times its step; sizes from the schema's ``maxLength``, ``maxItems`` and
``maxProperties`` (:mod:`~anyop.testing.fake.cel_decls`), unknown sizes the largest. The
worst case (``Max``) is what the limits are checked against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from anyop.testing.fake.cel_ast import Expr
from anyop.testing.fake.cel_check import Checked, is_accumulator
from anyop.testing.fake.cel_decls import Decl
from anyop.testing.fake.cel_signatures import NAMESPACES, UNKNOWN, T

__all__ = ["MAX", "estimated_cost"]

MAX = 2**64 - 1
Range = tuple[int, int]
_UNKNOWN: Range = (0, MAX)
_STRING_FACTOR = 0.1
_REGEX_FACTOR = 0.25
_MAX_NAME_FORMAT_REGEX = 128  # cel.MaxNameFormatRegexSize


def _add(a: Range, b: Range) -> Range:
    return min(a[0] + b[0], MAX), min(a[1] + b[1], MAX)


def _mul(a: Range, b: Range) -> Range:
    return min(a[0] * b[0], MAX), min(a[1] * b[1], MAX)


def _factor(x: int, y: float) -> int:
    if x > 0 and y > 0 and float(x) > MAX / y:
        return MAX
    ceil = math.ceil(float(x) * y)
    return MAX if ceil >= 2.0**64 else int(ceil)


def _by(a: Range, y: float) -> Range:
    return _factor(a[0], y), _factor(a[1], y)


def _union(a: Range, b: Range) -> Range:
    return min(a[0], b[0]), max(a[1], b[1])


_SCALARS = ("bool", "double", "duration", "int", "timestamp", "uint")


def _scalar(t: T) -> bool:
    """Whether values of a type are of one size (``isScalar``: an optional of one too)."""
    return t.kind in _SCALARS or (t.kind == "optional" and _scalar(t.params[0]))


@dataclass
class _Entry:
    kind: str  # list or map
    key: Range
    val: Range


def _union_entries(a: _Entry | None, b: _Entry | None) -> _Entry | None:
    if a is None or b is None:
        return None
    return _Entry(a.kind, _union(a.key, b.key), _union(a.val, b.val))


@dataclass
class _Local:
    path: list[str]
    size: Range | None
    entry: _Entry | None


class _Coster:
    def __init__(self, root: Decl, checked: Checked) -> None:
        self.root = root
        self.checked = checked
        self.paths: dict[int, list[str]] = {}
        self.sizes: dict[int, Range] = {}
        self.entries: dict[int, _Entry] = {}
        self.locals: dict[str, list[_Local]] = {}

    # -- sizes ----------------------------------------------------------------------------------

    def kind(self, e: Expr) -> str:
        return self.checked.types.get(e.id, T("unknown")).kind

    def local(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def path(self, e: Expr) -> list[str]:
        if e.kind == "ident" and (found := self.local(e.name)) is not None:
            return list(found.path)
        return list(self.paths.get(e.id, []))

    def estimate(self, path: list[str] | None) -> Range | None:
        """The size estimator of ``compilation.go``: the schema node the path leads to."""
        if not path:
            return None
        node: Decl | None = self.root
        for name in path[1:]:
            assert node is not None
            if name in ("@items", "@values"):
                node = node.elem
            elif name == "@keys":
                if node.key is None:  # keys: a StringType of no size
                    return (0, 0) if node.kind == "map" else None
                node = node.key
            elif node.kind == "map" and node.by_name:
                node = node.elem
            else:
                node = node.fields.get(name) if node.kind == "object" else None
            if node is None:
                return None
        assert node is not None
        return 0, node.max_elements

    def size(self, e: Expr) -> Range | None:
        if e.id in self.sizes:
            return self.sizes[e.id]
        if e.kind == "lit":
            if e.name == "string":
                return len(e.value), len(e.value)
            return (e.value, e.value) if e.name == "bytes" else (1, 1)
        if e.kind in ("list", "map"):
            count = len(e.args) if e.kind == "list" else len(e.entries)
            return count, count
        if (found := self.estimate(self.path(e))) is not None:
            self.sizes[e.id] = found
            return found
        if _scalar(self.checked.types.get(e.id, UNKNOWN)):
            return 1, 1
        if e.kind == "ident" and (var := self.local(e.name)) is not None and var.size:
            return var.size
        if self.kind(e) == "unknown":  # what this module does not model: never refused for
            return 0, 0
        return None

    def size_or_unknown(self, e: Expr) -> Range:
        found = self.size(e)
        return found if found is not None else _UNKNOWN

    def entry(self, e: Expr) -> _Entry | None:
        if e.id in self.entries:
            return self.entries[e.id]
        if e.kind == "ident" and (var := self.local(e.name)) is not None:
            return var.entry
        return None

    def node_size(self, e: Expr) -> Range:
        """``sizeEstimate`` of an AST node (a call's target or argument)."""
        found = self.size(e)
        if found is not None:
            return found
        path = self.path(e)
        if path and is_accumulator(path[0]):
            path = []
        return self.estimate(path) or _UNKNOWN

    def element_size(self, e: Expr) -> Range:
        """The size of a list's element (``listElementNode``)."""
        path = self.path(e)
        if path and is_accumulator(path[0]):
            return _UNKNOWN
        return self.estimate([*path, "@items"] if path else None) or _UNKNOWN

    # -- costs ----------------------------------------------------------------------------------

    def cost(self, e: Expr) -> Range:
        if e.kind == "lit":
            return 0, 0
        if e.kind == "ident":
            var = self.local(e.name)
            self.paths[e.id] = list(var.path) if var is not None else [e.name]
            return 1, 1
        if e.kind == "select":
            assert e.target is not None
            if e.test_only:
                return _add((1, 1), self.cost(e.target))
            total = self.cost(e.target)
            if self.kind(e.target) in ("map", "object", "param", "unknown"):
                total = _add(total, (1, 1))
            self.paths[e.id] = [*self.path(e.target), e.name]
            return total
        if e.kind == "call":
            return self.call(e)
        if e.kind == "list":
            spent: Range = (0, 0)
            item: Range = (MAX, 0) if e.args else (0, 0)
            for element in e.args:
                spent = _add(spent, self.cost(element))
                item = _union(item, self.size_or_unknown(element))
            self.entries[e.id] = _Entry("list", (1, 1), item)
            return _add(spent, (10, 10))
        if e.kind == "map":
            spent, key, val = (0, 0), (MAX, 0), (MAX, 0)  # (spent: typed above)
            if not e.entries:
                key = val = (0, 0)
            for k, v in e.entries:
                spent = _add(_add(spent, self.cost(k)), self.cost(v))
                key = _union(key, self.size_or_unknown(k))
                val = _union(val, self.size_or_unknown(v))
            self.entries[e.id] = _Entry("map", key, val)
            return _add(spent, (30, 30))
        if e.kind == "struct":  # (a message's base cost, and its fields')
            spent = (40, 40)
            for _, value in e.entries:
                spent = _add(spent, self.cost(value))
            return spent
        if e.kind == "comp":
            return self.comprehension(e)
        return 0, 0

    def push(self, name: str, local: _Local) -> None:
        self.locals.setdefault(name, []).append(local)

    def pop(self, name: str) -> None:
        self.locals[name].pop()

    def comprehension(self, e: Expr) -> Range:
        assert e.iter_range is not None
        assert e.accu_init is not None
        assert e.loop_cond is not None
        assert e.loop_step is not None
        assert e.result is not None
        total = _add(self.cost(e.iter_range), self.cost(e.accu_init))
        init = e.accu_init
        self.push(e.accu_var, _Local(self.path(init), self.size(init), self.entry(init)))
        entry = self.entry(e.iter_range)
        container = entry.kind if entry is not None else self.kind(e.iter_range)
        path = self.path(e.iter_range)
        size, sub = (entry.key if entry else None), "@keys"
        if container == "list" and not e.iter_var2:
            size, sub = (entry.val if entry else None), "@items"
        elif container == "list":  # a two-variable one's index
            sub = "@indices"
        self.push(e.iter_var, _Local([*path, sub], size, None))
        if e.iter_var2:  # and its value
            value = (entry.val if entry else None), "@items" if container == "list" else "@values"
            self.push(e.iter_var2, _Local([*path, value[1]], value[0], None))
        loop = self.cost(e.loop_cond)
        step = self.cost(e.loop_step)
        self.pop(e.iter_var)
        if e.iter_var2:
            self.pop(e.iter_var2)
        total = _add(total, self.cost(e.result))
        self.pop(e.accu_var)
        count = self.size_or_unknown(e.iter_range)
        total = _add(total, _mul(count, _add(step, loop)))
        if init.kind == "lit":
            if (found := self.size(init)) is not None:
                self.sizes[e.id] = found
        elif init.kind in ("list", "map"):
            self.sizes[e.id] = count
            if (step_entry := self.entry(e.loop_step)) is not None:
                self.entries[e.id] = step_entry
        return total

    def optional_macro(self, e: Expr) -> Range:
        """``x.optMap(v, f)`` as cel-go expands it: ``x.hasValue() ? optional.of(f)`` (``v``
        an accumulator of ``x.value()``, over an empty list) ``: optional.none()``;
        ``optFlatMap`` without the ``optional.of``."""
        assert e.target is not None
        target = self.cost(e.target)
        optional = self.checked.types.get(e.target.id)
        scalar = optional is not None and _scalar(optional)
        self.push(e.args[0].name, _Local([], (1, 1) if scalar else None, None))
        body = self.cost(e.args[1])
        self.pop(e.args[0].name)
        comprehension = _add(_add((10, 10), _add(target, (1, 1))), body)  # [], x.value(), f
        then = _add(comprehension, (1, 1)) if e.name == "optMap" else comprehension
        return _add(_add(target, (1, 1)), _union(then, (1, 1)))

    def call(self, e: Expr) -> Range:
        macro = e.name in ("optMap", "optFlatMap") and e.target is not None
        if macro and len(e.args) == 2 and e.args[0].kind == "ident":
            return self.optional_macro(e)
        if e.name == "dyn" and e.target is None and len(e.args) == 1:
            unwrapped = _add((1, 1), self.cost(e.args[0]))
            if (found := self.size(e.args[0])) is not None:
                self.sizes[e.id] = found
            if (entry := self.entry(e.args[0])) is not None:
                self.entries[e.id] = entry
            return unwrapped
        args = e.args
        arg_costs = [self.cost(arg) for arg in args]
        total: Range = (0, 0)
        function, target = e.name, e.target
        if (
            target is not None
            and target.kind == "ident"
            and target.name in NAMESPACES
            and (self.kind(target) == "unknown")
        ):
            function, target = f"{target.name}.{e.name}", None
        if target is not None:
            total = self.cost(target)
        overloads = self.checked.overloads.get(e.id) or [""]
        arg_sum: Range = (0, 0)
        for each in arg_costs:
            arg_sum = _add(arg_sum, each)
        cost: Range = (MAX, 0)
        result: Range | None = None
        for overload in overloads:
            own, sized = self.function(e, function, overload, target, arg_costs)
            cost = _union(cost, _add(own, arg_sum) if overload not in _NO_ARGS else own)
            if sized is not None:
                result = sized if result is None else _union(result, sized)
            if overload in ("index_list", "index_map") and args:
                entry = self.entry(args[0])
                result = entry.val if entry is not None else None
                sub = "@items" if overload == "index_list" else "@values"
                self.paths[e.id] = [*self.path(args[0]), sub]
            if result is None:
                result = self.size(e)
        if result is not None:
            self.sizes[e.id] = result
        return _add(total, cost)

    def function(
        self, e: Expr, function: str, overload: str, target: Expr | None, costs: list[Range]
    ) -> tuple[Range, Range | None]:
        """A call's own cost (its arguments' added by the caller) and its result's size."""
        args = e.args
        extension = self.extension(overload, target, args)
        if extension is not None:
            return extension
        library = self.library(function, overload, target, args)
        if library is not None:
            return library
        if overload == "string_format" and target is not None:
            return _by(self.size_or_unknown(target), _STRING_FACTOR), None
        if overload == "string_to_bytes" and len(args) == 1:
            sz = self.size_or_unknown(args[0])
            return _by(sz, _STRING_FACTOR), (sz[0], min(sz[1] * 4, MAX))
        if overload == "bytes_to_string" and len(args) == 1:
            sz = self.size_or_unknown(args[0])
            return _by(sz, _STRING_FACTOR), (sz[0] // 4, sz[1])
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return _by(self.size_or_unknown(args[0]), _STRING_FACTOR), None
        if overload == "in_list" and len(args) == 2:
            return _by(self.size_or_unknown(args[1]), 1), None
        if overload == "matches_string" and target is not None and len(args) == 1:
            text = _by(_add(self.node_size(target), (1, 1)), _STRING_FACTOR)
            regex = _by(self.size_or_unknown(args[0]), _REGEX_FACTOR)
            return _mul(text, regex), None
        if overload == "contains_string" and target is not None and len(args) == 1:
            text = _by(self.node_size(target), _STRING_FACTOR)
            return _mul(text, _by(self.size_or_unknown(args[0]), _STRING_FACTOR)), None
        if overload in ("logical_and", "logical_or"):
            return (costs[0][0], _add(costs[0], costs[1])[1]), None
        if overload == "conditional":
            size = _union(self.size_or_unknown(args[1]), self.size_or_unknown(args[2]))
            entry = _union_entries(self.entry(args[1]), self.entry(args[2]))
            if entry is not None:
                self.entries[e.id] = entry
            return _add(costs[0], _union(costs[1], costs[2])), size
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            size = _add(self.size_or_unknown(args[0]), self.size_or_unknown(args[1]))
            entry = _union_entries(self.entry(args[0]), self.entry(args[1]))
            if entry is not None:
                self.entries[e.id] = entry
            if overload == "add_list":
                return (1, 1), size
            return _by(size, _STRING_FACTOR), size
        if overload in ("equals", "not_equals") or overload.endswith(
            ("string_string", "bytes_bytes")
        ):
            lhs, rhs = self.size_or_unknown(args[0]), self.size_or_unknown(args[1])
            smallest = min(lhs[1], rhs[1])
            return _by((1 if smallest > 0 else 0, smallest), _STRING_FACTOR), None
        return (1, 1), None

    def extension(
        self, overload: str, target: Expr | None, args: list[Expr]
    ) -> tuple[Range, Range | None] | None:
        """The estimates cel-go's lists (version 3) and sets extensions give their overloads
        (``OverloadCostEstimate``): a list they make costs its base and a call besides."""
        if overload.startswith("list_sets_") and len(args) == 2:
            times = 2 if overload == "list_sets_equivalent_list" else 1
            pairs = _mul(self.node_size(args[0]), self.node_size(args[1]))
            return _add(_by(pairs, times), (1, 1)), None
        made: Range | None = None  # the size of the list made, and the cost of an element
        factor = 1.0
        if overload == "lists_range" and target is None and len(args) == 1:
            made = _fixed(_int_literal(args[0], MAX))
        elif target is None:
            return None
        elif overload == "list_slice" and len(args) == 2:
            size = self.node_size(target)
            start, end = _int_literal(args[0], 0), _int_literal(args[1], size[1])
            made = _fixed((end - start) % 2**64)
        elif overload in ("list_reverse", "list_flatten", "list_flatten_int"):
            made = self.node_size(target)
            if overload == "list_flatten_int" and len(args) == 1:
                factor = float(_int_literal(args[0], MAX))
        elif overload == "list_distinct" or overload.endswith("_sort"):
            size = self.node_size(target)
            made, factor = _mul(size, size), 2.0
            if overload in ("list_string_sort", "list_bytes_sort"):
                factor += _STRING_FACTOR
        if made is None:
            return None
        return _add(_by(made, factor), (11, 11)), made  # (the list's base 10, the call's 1)

    def library(
        self, function: str, overload: str, target: Expr | None, args: list[Expr]
    ) -> tuple[Range, Range | None] | None:
        """Kubernetes' ``EstimateCallCost`` (``pkg/cel/library/cost.go``)."""
        if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf") and target:
            if self.kind(target) == "list":
                element: Range = (1, 1)
                item = self.checked.types.get(target.id)
                if item is not None and item.params and item.params[0].kind in ("string", "bytes"):
                    element = _add(element, _by(self.element_size(target), _STRING_FACTOR))
                return _mul(self.node_size(target), element), None
            return _by(self.node_size(target), _STRING_FACTOR), None
        if function == "replace" and target and len(args) >= 2:
            size = self.node_size(target)
            made = _replaced(size, self.node_size(args[0]), self.node_size(args[1]))
            return _by(size, 2 * _STRING_FACTOR), made
        if function == "join" and target:
            items = self.node_size(target)
            made = _mul(items, self.element_size(target))
            if args:
                separators = (max(items[0] - 1, 0), max(items[1] - 1, 0))
                made = _add(made, _mul(self.node_size(args[0]), separators))
            return _by(made, _STRING_FACTOR), made
        if function in ("url", "jsonpatch.escapeKey") and len(args) == 1:
            size = self.node_size(args[0])
            return _by(size, _STRING_FACTOR), size
        if function in ("lowerAscii", "upperAscii", "substring", "trim") and target:
            size = self.node_size(target)
            return _by(size, _STRING_FACTOR), size
        if function == "split" and target:
            size = self.node_size(target)
            most = size[1]
            if len(args) > 1 and args[1].kind == "lit" and args[1].name == "int":
                most = int(args[1].value) % 2**64
            return _by(size, 2 * _STRING_FACTOR), (0, most)
        if function in ("find", "findAll") and target and args:
            size = self.node_size(target)
            text = _by(_add(size, (1, 1)), _STRING_FACTOR)
            return _mul(text, _by(self.node_size(args[0]), _REGEX_FACTOR)), (0, size[1])
        if function in ("cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver",
                        "isSemver") and args:  # fmt: skip
            return _by(self.node_size(args[0]), _STRING_FACTOR), None
        if function == "ip" and args and target is None:
            return _by(self.node_size(args[0]), _STRING_FACTOR), None
        if function == "ip.isCanonical" and args:
            return _by(self.node_size(args[0]), 2 * _STRING_FACTOR), None
        if function == "validate" and args:
            size = _by(self.node_size(args[0]), _STRING_FACTOR)
            return _by(size, _MAX_NAME_FORMAT_REGEX * _REGEX_FACTOR), None
        if function in ("containsIP", "containsCIDR") and args:
            cost = _by((8, 32), _STRING_FACTOR)  # two IPs' bytes (4 or 16 each) compared
            if function == "containsCIDR":  # (masked, and the prefixes compared)
                cost = _add(_add(cost, _by((4, 16), _STRING_FACTOR)), (1, 1))
            if overload.endswith("_string"):  # parsed first
                cost = _add(cost, _by(self.node_size(args[0]), _STRING_FACTOR))
            return cost, None
        if function == "_==_" and len(args) == 2:
            return self.opaque_equality(args)
        if function in _UNIT:
            return (1, 1), None
        return None

    def opaque_equality(self, args: list[Expr]) -> tuple[Range, Range | None] | None:
        """``==`` of two values of one type of Kubernetes' libraries: one step, but for a named
        format's (its name, of at most 64 characters) and a URL's (its text)."""
        kinds = {self.kind(arg) for arg in args}
        if len(kinds) != 1:
            return None
        kind = kinds.pop()
        if kind in ("net.IP", "net.CIDR", "kubernetes.Quantity", "kubernetes.Semver"):
            return (1, 1), None
        if kind == "kubernetes.NamedFormat":
            return _by((1, 64), _STRING_FACTOR), None  # cel.MaxFormatSize
        if kind == "kubernetes.URL":
            found = self.sizes.get(args[1].id)  # (the right-hand side's, both times: as Go's)
            return _by((1, found[1] if found is not None else 1), _STRING_FACTOR), None
        return None


def _fixed(n: int) -> Range:
    return min(n, MAX), min(n, MAX)


def _int_literal(e: Expr, default: int) -> int:
    """``nodeAsIntValue``: an int literal's value (0 for a negative one), else ``default``."""
    if e.kind == "lit" and e.name == "int":
        return max(int(e.value), 0)
    return default


def _replaced(size: Range, old: Range, new: Range) -> Range:
    """The size of ``replace``'s result (Kubernetes' estimate): the most replacements of the
    shortest ``old`` by the longest ``new``, the fewest the other way round."""
    if old[0] == 0:  # an empty one surrounds every character
        most, kept_most = (size[1] + 1 if size[1] < MAX else size[1]), size[1]
    elif new[1] <= old[0]:
        most, kept_most = 0, size[1]
    else:
        most, kept_most = math.ceil(size[1] / old[0]), 0
    if old[1] == 0:
        least, kept_least = (size[0] + 1 if size[0] < MAX else size[0]), size[0]
    elif old[1] <= new[0]:
        least, kept_least = 0, size[0]
    else:
        least, kept_least = math.ceil(size[0] / old[1]), 0
    return _add(_mul((least, most), new), (kept_least, kept_most))


_UNIT = {"masked", "prefixLength", "family", "isUnspecified", "isLoopback", "format.named",
         "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast", "sign", "asInteger",
         "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo", "add",
         "sub", "major", "minor", "patch", "getScheme", "getHostname", "getHost", "getPort",
         "getEscapedPath", "getQuery"}  # fmt: skip
_NO_ARGS = {"logical_and", "logical_or", "conditional"}
"""Overloads whose estimate already holds their arguments' costs."""


def estimated_cost(expr: Expr, root: Decl, checked: Checked) -> int:
    """The worst-case cost of a checked rule (``EstimateCost(...).Max``)."""
    return _Coster(root, checked).cost(expr)[1]
