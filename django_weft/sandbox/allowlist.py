"""Which names a stored module may read from each module it imports: an allow-list.

A module a stored module imports is handed over as a view holding only the names listed
here (or added by ``WEFT_SANDBOX_IMPORT_NAMES``), never the real module: every other
name (a submodule, an imported helper, a module the real one imported for itself) is
not there. A module in ``WEFT_SANDBOX_IMPORTS`` with no allow-list cannot be imported.

Left out on purpose are the helpers that would do for a module what the guards refuse
to do: read or write an attribute named by a string the caller gives
(``functools.update_wrapper``, ``operator.attrgetter``), read attributes from a format
string (``string.Formatter``, ``collections.UserString.format``), compile code
(``collections.namedtuple``, ``functools.singledispatch``'s annotations), or hand back
objects' inner state (``copy``). The ones people reach for are in :data:`REFUSED_NAMES`
with the reason, so the refusal says why; they stay refused even when a project lists
them (the system check ``django_weft.E040`` says so).

This module is plain data and two lookups: the host's system checks and the sandbox
child both read it, and it imports nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def _words(names: str) -> frozenset[str]:
    return frozenset(names.split())


_COPIES_BY_NAME = "it copies attributes by name, unguarded"
_READS_FORMAT = "its format strings read attributes unguarded; use an f-string or %"

#: The public names a stored module may read from each module, by module.
MODULE_NAMES: dict[str, frozenset[str]] = {
    # -- the defaults of WEFT_SANDBOX_IMPORTS -------------------------------------------
    "math": _words(
        "acos acosh asin asinh atan atan2 atanh cbrt ceil comb copysign cos cosh degrees "
        "dist e erf erfc exp exp2 expm1 fabs factorial floor fma fmod frexp fsum gamma "
        "gcd hypot inf isclose isfinite isinf isnan isqrt lcm ldexp lgamma log log10 "
        "log1p log2 modf nan nextafter perm pi pow prod radians remainder sin sinh sqrt "
        "sumprod tan tanh tau trunc ulp"
    ),
    "json": _words("JSONDecodeError JSONDecoder JSONEncoder dump dumps load loads"),
    "datetime": _words("MAXYEAR MINYEAR UTC date datetime time timedelta timezone tzinfo"),
    "re": _words(
        "A ASCII DOTALL I IGNORECASE L LOCALE M MULTILINE Match NOFLAG Pattern "
        "PatternError RegexFlag S U UNICODE VERBOSE X compile error escape findall "
        "finditer fullmatch match purge search split sub subn"
    ),
    "decimal": _words(
        "BasicContext Clamped Context ConversionSyntax Decimal DecimalException "
        "DecimalTuple DefaultContext DivisionByZero DivisionImpossible DivisionUndefined "
        "ExtendedContext FloatOperation HAVE_CONTEXTVAR HAVE_THREADS Inexact "
        "InvalidContext InvalidOperation MAX_EMAX MAX_PREC MIN_EMIN MIN_ETINY Overflow "
        "ROUND_05UP ROUND_CEILING ROUND_DOWN ROUND_FLOOR ROUND_HALF_DOWN ROUND_HALF_EVEN "
        "ROUND_HALF_UP ROUND_UP Rounded Subnormal Underflow getcontext localcontext "
        "setcontext"
    ),
    "statistics": _words(
        "LinearRegression NormalDist StatisticsError correlation covariance fmean "
        "geometric_mean harmonic_mean kde kde_random linear_regression mean median "
        "median_grouped median_high median_low mode multimode pstdev pvariance quantiles "
        "stdev variance"
    ),
    "itertools": _words(
        "accumulate batched chain combinations combinations_with_replacement compress "
        "count cycle dropwhile filterfalse groupby islice pairwise permutations product "
        "repeat starmap takewhile tee zip_longest"
    ),
    "functools": _words(
        "cache cached_property cmp_to_key lru_cache partial partialmethod reduce total_ordering"
    ),
    "collections": _words("ChainMap Counter OrderedDict UserDict UserList abc defaultdict deque"),
    "collections.abc": _words(
        "AsyncGenerator AsyncIterable AsyncIterator Awaitable Buffer Callable Collection "
        "Container Coroutine Generator Hashable ItemsView Iterable Iterator KeysView "
        "Mapping MappingView MutableMapping MutableSequence MutableSet Reversible "
        "Sequence Set Sized ValuesView"
    ),
    "string": _words(
        "Template ascii_letters ascii_lowercase ascii_uppercase capwords digits hexdigits "
        "octdigits printable punctuation whitespace"
    ),
    # -- modules a project may add to WEFT_SANDBOX_IMPORTS ------------------------------
    "operator": _words(
        "abs add and_ call concat contains countOf delitem eq floordiv ge getitem gt iadd "
        "iand iconcat ifloordiv ilshift imatmul imod imul index indexOf inv invert ior "
        "ipow irshift is_ is_not isub itemgetter itruediv ixor le length_hint lshift lt "
        "matmul mod mul ne neg not_ or_ pos pow rshift setitem sub truediv truth xor"
    ),
    "random": _words(
        "Random betavariate binomialvariate choice choices expovariate gammavariate gauss "
        "getrandbits lognormvariate normalvariate paretovariate randbytes randint random "
        "randrange sample seed shuffle triangular uniform vonmisesvariate weibullvariate"
    ),
    "bisect": _words("bisect bisect_left bisect_right insort insort_left insort_right"),
    "heapq": _words("heapify heappop heappush heappushpop heapreplace merge nlargest nsmallest"),
    "fractions": _words("Fraction"),
    "textwrap": _words("TextWrapper dedent fill indent shorten wrap"),
    "unicodedata": _words(
        "bidirectional category combining decimal decomposition digit east_asian_width "
        "is_normalized lookup mirrored name normalize numeric unidata_version"
    ),
    "calendar": _words(
        "APRIL AUGUST Calendar DECEMBER Day FEBRUARY FRIDAY HTMLCalendar "
        "IllegalMonthError IllegalWeekdayError JANUARY JULY JUNE MARCH MAY MONDAY Month "
        "NOVEMBER OCTOBER SATURDAY SEPTEMBER SUNDAY TextCalendar THURSDAY TUESDAY "
        "WEDNESDAY day_abbr day_name firstweekday isleap leapdays month_abbr month_name "
        "monthcalendar monthrange timegm weekday"
    ),
}

#: Names left out of an allow-list that people try, with why; refused by name.
REFUSED_NAMES: dict[str, dict[str, str]] = {
    "functools": {
        "update_wrapper": _COPIES_BY_NAME,
        "wraps": _COPIES_BY_NAME,
        "singledispatch": "it evaluates type annotations as code, unguarded",
        "singledispatchmethod": "it evaluates type annotations as code, unguarded",
    },
    "operator": {
        "attrgetter": "it reads attributes by name, unguarded",
        "methodcaller": "it calls methods by name, unguarded",
    },
    "string": {"Formatter": _READS_FORMAT},
    "collections": {
        "namedtuple": "it compiles code from the names it is given",
        "UserString": f"its format() and format_map() are str.format: {_READS_FORMAT}",
    },
    "json": {
        "decoder": "it is the module holding json's internal helpers; use json.loads",
        "encoder": "it is the module holding json's internal helpers; use json.dumps",
        "scanner": "it is the module holding json's internal helpers; use json.loads",
    },
}

#: Modules that have no allow-list on purpose, with why; importing one says so.
REFUSED_MODULES: dict[str, str] = {
    "copy": "copy.copy and copy.deepcopy read objects' inner state through __reduce_ex__ "
    "and hand it back (deepcopy's memo)",
    "dataclasses": "it compiles code from the names it is given",
    "typing": "typing.get_type_hints evaluates annotations as code, unguarded",
}


def allowed_names(module: str, configured: Mapping[str, Sequence[str]]) -> frozenset[str] | None:
    """The names ``module`` exposes: its built-in allow-list and the project's additions
    (``WEFT_SANDBOX_IMPORT_NAMES``), less the refused ones; None when it has neither."""
    if module in REFUSED_MODULES:
        return None
    built_in = MODULE_NAMES.get(module)
    added = configured.get(module)
    if built_in is None and added is None:
        return None
    names = (built_in or frozenset()) | frozenset(added or ())
    return names - REFUSED_NAMES.get(module, {}).keys()


def refusal(module: str, name: str) -> str | None:
    """Why ``module.name`` is refused, when it is one of the refused helpers."""
    return REFUSED_NAMES.get(module, {}).get(name)


def no_allow_list(module: str) -> str:
    """Why ``module`` cannot be imported: the end of ``import of "x" is not allowed: ...``."""
    if module in REFUSED_MODULES:
        return REFUSED_MODULES[module]
    return (
        f'the module "{module}" has no attribute allow-list (name the attributes a module '
        "may read from it in WEFT_SANDBOX_IMPORT_NAMES)"
    )
