"""The sandbox's tokenizer: jinja's token stream, produced with fewer steps per token.

A fifth of compiling a chat template went to tokenizing it (0.13 s of 0.63 s CPU over the corpus; 0.06 s
here): for every token jinja's lexer tries its rules one regular expression at a time (up to seven inside a
tag, whitespace a token of its own), then a second generator converts each raw token.
This one tries a tag's rules as one alternation of jinja's own expressions, in jinja's order (the first rule
that matches wins in both), and yields finished tokens directly. What comes out is what jinja's
``Lexer.tokenize`` gives for the same source, token for token (type, value, line), and the same
``TemplateSyntaxError`` (message and line) at the same point of the stream: tokens are produced one at a
time, so an error further on is raised only once the parser asks that far, as with jinja's.

Only the configuration the sandbox uses (no line statements or line comments, ``\\n`` newlines,
``lstrip_blocks``) takes this path; any other asks jinja's lexer.
"""

from __future__ import annotations

import re
from ast import literal_eval

import jinja2.lexer as jl
from jinja2.exceptions import TemplateSyntaxError
from jinja2.lexer import Token, TokenStream

_TOKEN = tuple.__new__  # _Token(...) without its Python-level __new__
_SPLITS: dict = {}  # a token expression -> its (type, value), None for a bare type (``_Token.test``)


class _Token(Token):
    """jinja's token, tested as jinja tests it: its parser tests every expression's first token against
    ``name:if``, ``name:or``, ``name:and``, ``name:not``, ``name:in``… and jinja's ``test`` splits the
    expression into a new list at each test (a twentieth of a compile); here each is split once."""

    __slots__ = ()

    def test(self, expr: str) -> bool:
        if self[1] == expr:
            return True
        split = _SPLITS.get(expr, False)
        if split is False:
            if len(_SPLITS) >= 4096:  # expressions come from the parser, and block names from templates
                _SPLITS.clear()
            split = _SPLITS[expr] = tuple(expr.split(":", 1)) if ":" in expr else None
        return split is not None and split[0] == self[1] and split[1] == self[2]

    def test_any(self, *iterable: str) -> bool:
        for expr in iterable:
            if self.test(expr):
                return True
        return False


class _TokenStream(TokenStream):
    """jinja's token stream; ``skip_if`` without the call to ``next_if`` it makes."""

    def skip_if(self, expr: str) -> bool:
        if self.current.test(expr):
            next(self)
            return True
        return False


def _alternation(rules: list) -> re.Pattern:
    """One pattern trying ``(kind, compiled pattern)`` in order: each under its own flags, named by its kind.
    Whitespace between tokens is skipped in the same match (no other rule's match starts with whitespace, so
    the next token is the one jinja finds after its whitespace token; ``*+`` never gives any back)."""
    parts = []
    for kind, rx in rules:
        flags = "".join(c for f, c in ((re.I, "i"), (re.M, "m"), (re.S, "s"), (re.X, "x")) if rx.flags & f)
        tail = "\n" if rx.flags & re.X else ""  # a verbose pattern may end in a comment
        body = f"(?{flags}:{rx.pattern}{tail})" if flags else f"(?:{rx.pattern})"
        parts.append(f"(?P<{kind}>{body})")
    return re.compile(rf"\s*+(?:{'|'.join(parts)})")  # jinja's whitespace rule is \s+ (``Lexer.__init__`` checks)


class Lexer(jl.Lexer):
    def __init__(self, environment) -> None:
        super().__init__(environment)
        self.fast = (
            environment.line_statement_prefix is None
            and environment.line_comment_prefix is None
            and environment.newline_sequence == "\n"
            and self.lstrip_blocks
        )
        rules = self.rules
        self.root = rules["root"][0].pattern
        self.comment = rules[jl.TOKEN_COMMENT_BEGIN][0].pattern
        self.raw = rules[jl.TOKEN_RAW_BEGIN][0].pattern
        inner = [(r.tokens, r.pattern) for r in rules[jl.TOKEN_BLOCK_BEGIN][1:]]
        if [k for k, _ in inner] != [jl.TOKEN_WHITESPACE, jl.TOKEN_FLOAT, jl.TOKEN_INTEGER, jl.TOKEN_NAME, jl.TOKEN_STRING, jl.TOKEN_OPERATOR]:
            self.fast = False  # a jinja whose tag rules differ from the ones this was written against
        if jl.whitespace_re.pattern != r"\s+" or jl.whitespace_re.flags & ~re.U:
            self.fast = False
        inner = inner[1:]  # whitespace: skipped ahead of each token (``_alternation``)
        # Per tag kind: (the rules with the tag's end first, the rules without it: inside brackets the end is no end).
        self.tags = {
            kind: (_alternation([("end", rules[kind][0].pattern), *inner]), _alternation(inner), end)
            for kind, end in ((jl.TOKEN_BLOCK_BEGIN, jl.TOKEN_BLOCK_END), (jl.TOKEN_VARIABLE_BEGIN, jl.TOKEN_VARIABLE_END))
        }

    def tokenize(self, source, name=None, filename=None, state=None) -> TokenStream:
        if not self.fast or state is not None:
            return super().tokenize(source, name, filename, state)
        return _TokenStream(self._tokens(source, name, filename), name, filename)

    def _tokens(self, source: str, name, filename):
        lines = jl.newline_re.split(source)[::2]
        if not self.keep_trailing_newline and lines[-1] == "":
            del lines[-1]
        source = "\n".join(lines)  # from here on every line ends in \n alone: text needs no newline conversion
        root, comment, raw, tags = self.root, self.comment, self.raw, self.tags
        blank, space = jl.whitespace_re.fullmatch, jl.whitespace_re.match
        operators = jl.operators
        data_t, name_t, string_t, int_t, float_t = jl.TOKEN_DATA, jl.TOKEN_NAME, jl.TOKEN_STRING, jl.TOKEN_INTEGER, jl.TOKEN_FLOAT
        closers = {"{": "}", "(": ")", "[": "]"}
        pos, lineno, size = 0, 1, len(source)
        while pos < size:
            m = root.match(source, pos)
            if m is None:  # no tag ahead: the rest is text
                yield _TOKEN(_Token, (lineno, data_t, source[pos:]))
                return
            # m: text, then one opener (its group, then its whitespace-control sign group).
            text, at = m.group(1), m.lastindex
            kind, opener, sign = m.lastgroup, m.group(at), m.group(at + 1)
            text, dropped = _strip(text, sign, kind != jl.TOKEN_VARIABLE_BEGIN, pos == 0 or source[pos - 1] == "\n", blank)
            if text:
                yield _TOKEN(_Token, (lineno, data_t, text))
                lineno += text.count("\n")
            lineno += dropped
            if kind == jl.TOKEN_RAW_BEGIN:  # not a token: ``{% raw %}`` only switches to verbatim text
                lineno += opener.count("\n")
                pos = m.end()
                m = raw.match(source, pos)
                if m is None:
                    if pos < size:
                        raise TemplateSyntaxError("Missing end of raw directive", lineno, filename)
                    return
                text, dropped = _strip(m.group(1), m.group(3), True, source[pos - 1] == "\n", blank)
                if text:
                    yield _TOKEN(_Token, (lineno, data_t, text))
                    lineno += text.count("\n")
                lineno += dropped + m.group(2).count("\n")
                pos = m.end()
                continue
            if kind == jl.TOKEN_COMMENT_BEGIN:  # comments are no tokens; only their lines count
                pos = m.end()
                m = comment.match(source, pos)
                if m is None:
                    if pos < size:
                        raise TemplateSyntaxError("Missing end of comment tag", lineno, filename)
                    return
                lineno += m.group().count("\n")
                pos = m.end()
                continue
            yield _TOKEN(_Token, (lineno, kind, opener))
            pos = m.end()
            with_end, without_end, end_t = tags[kind]
            brackets: list[str] = []
            while True:
                m = (without_end if brackets else with_end).match(source, pos)
                if m is None:  # after any whitespace: the source's end, or a character no rule takes
                    blanks = space(source, pos)
                    if blanks is not None:
                        lineno += blanks.group().count("\n")
                        pos = blanks.end()
                    if pos >= size:
                        return
                    raise TemplateSyntaxError(f"unexpected char {source[pos]!r} at {pos}", lineno, name, filename)
                k = m.lastgroup
                start = m.start(k)
                if start != pos:
                    lineno += source.count("\n", pos, start)
                value = m.group(k)
                pos = m.end()
                if k == "operator":
                    if value in closers:
                        brackets.append(closers[value])
                    elif value in ("}", ")", "]"):
                        if not brackets:
                            raise TemplateSyntaxError(f"unexpected '{value}'", lineno, name, filename)
                        expected = brackets.pop()
                        if expected != value:
                            raise TemplateSyntaxError(f"unexpected '{value}', expected '{expected}'", lineno, name, filename)
                    yield _TOKEN(_Token, (lineno, operators[value], value))
                elif k == "name":
                    if not value.isidentifier():
                        raise TemplateSyntaxError("Invalid character in identifier", lineno, name, filename)
                    yield _TOKEN(_Token, (lineno, name_t, value))
                elif k == "end":
                    yield _TOKEN(_Token, (lineno, end_t, value))
                    lineno += value.count("\n")
                    break
                elif k == "string":
                    try:
                        s = value[1:-1].encode("ascii", "backslashreplace").decode("unicode-escape")
                    except Exception as e:
                        raise TemplateSyntaxError(str(e).split(":")[-1].strip(), lineno, name, filename) from e
                    yield _TOKEN(_Token, (lineno, string_t, s))
                    lineno += value.count("\n")
                elif k == "integer":
                    yield _TOKEN(_Token, (lineno, int_t, int(value.replace("_", ""), 0)))
                else:
                    yield _TOKEN(_Token, (lineno, float_t, literal_eval(value.replace("_", ""))))


def _strip(text: str, sign: str, lstrip: bool, line_starting: bool, blank) -> tuple[str, int]:
    """The text before a tag after its whitespace control: ``-`` drops all trailing whitespace (its newlines
    still count, returned second), and ``lstrip_blocks`` drops the blanks before a tag alone at a line's
    start unless the tag says ``+``."""
    if sign == "-":
        kept = text.rstrip()
        return kept, text.count("\n", len(kept))
    if sign != "+" and lstrip:
        start = text.rfind("\n") + 1
        if (start > 0 or line_starting) and blank(text, start):
            return text[:start], 0
    return text, 0


_LEXERS: dict[tuple, Lexer] = {}


def lexer_for(environment) -> Lexer:
    """One lexer per configuration, as jinja keeps one (building the rules costs more than a small parse)."""
    e = environment
    key = (e.block_start_string, e.block_end_string, e.variable_start_string, e.variable_end_string,
           e.comment_start_string, e.comment_end_string, e.line_statement_prefix, e.line_comment_prefix,
           e.trim_blocks, e.lstrip_blocks, e.newline_sequence, e.keep_trailing_newline)
    lexer = _LEXERS.get(key)
    if lexer is None:
        lexer = _LEXERS[key] = Lexer(environment)
    return lexer
